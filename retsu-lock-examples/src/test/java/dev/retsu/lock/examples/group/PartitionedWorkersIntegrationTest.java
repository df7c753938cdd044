package dev.retsu.lock.examples.group;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.examples.ExampleCopy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The group example as a user runs it: two copies in their own JVMs against one PostgreSQL share
 * the 16 partitions fairly (8 each, as their printed metrics say), every partition's task records
 * its run under its term's fencing token, and SIGTERM on one copy runs its shutdown hook, so its
 * partitions are released and the other copy owns all 16, each with a newer token.
 */
@ExtendWith(PostgresExtension.class)
class PartitionedWorkersIntegrationTest {

  private static final Duration STARTUP = Duration.ofSeconds(90);

  /** A few membership intervals (2 s each), a refresh (5 s) and a JVM that is busy exiting. */
  private static final Duration REBALANCE = Duration.ofSeconds(45);

  /** What a JVM ended by SIGTERM exits with once its shutdown hooks are done: 128 + 15. */
  private static final int SIGTERM_STATUS = 143;

  private final List<Copy> copies = new ArrayList<>();

  @AfterEach
  void killCopies() {
    copies.forEach(Copy::close);
  }

  @Test
  void twoCopiesShareThePartitionsAndOnSigtermTheOtherOwnsThemAllWithNewerTokens(TestDatabase db)
      throws Exception {
    Copy a = start(db, "a");
    Copy b = start(db, "b");
    await("8 partitions each")
        .atMost(STARTUP.plus(REBALANCE))
        .until(() -> a.lastHolding().equals("8 of 16") && b.lastHolding().equals("8 of 16"));
    await("a run of every partition").atMost(REBALANCE).until(() -> owners(db).size() == 16);
    Map<Integer, Row> before = owners(db);
    assertThat(before.values().stream().map(Row::member).distinct())
        .containsExactlyInAnyOrder(a.member(), b.member());

    int printedBefore = a.lines().size(); // the first copy also released 8 when the other joined
    a.process.toHandle().destroy(); // SIGTERM, as Ctrl-C or a deployment stop

    await("a exits").atMost(REBALANCE).until(a::exitedAndDrained);
    assertThat(a.process.exitValue()).as(a.output()).isEqualTo(SIGTERM_STATUS);
    List<String> afterSigterm = a.lines().subList(printedBefore, a.lines().size());
    assertThat(
            afterSigterm.stream().filter(l -> l.startsWith("released ") && l.endsWith(": CLOSED")))
        .as(
            "the shutdown hook closed the group: onLost for each of its 8 partitions\n"
                + a.output())
        .hasSize(8);
    await("b owns all 16").atMost(REBALANCE).until(() -> b.lastHolding().equals("16 of 16"));
    String bId = b.member();
    // Every partition ran again since `before`: the ones b already owned too, which with the
    // group's push path may not have had their next run yet when b owns all 16.
    await("b ran every partition")
        .atMost(REBALANCE)
        .until(
            () ->
                owners(db).entrySet().stream()
                    .allMatch(
                        e ->
                            e.getValue().member().equals(bId)
                                && e.getValue().runs() > before.get(e.getKey()).runs()));
    Map<Integer, Row> after = owners(db);
    for (Map.Entry<Integer, Row> e : before.entrySet()) {
      Row was = e.getValue();
      Row now = after.get(e.getKey());
      if (!was.member().equals(bId)) {
        assertThat(now.newerThan(was))
            .as("partition %d: %s after %s", e.getKey(), now, was)
            .isTrue();
      }
      assertThat(now.runs()).isGreaterThan(was.runs());
    }

    b.process.toHandle().destroy();
    await("b exits").atMost(REBALANCE).until(b::exitedAndDrained);
    assertThat(b.process.exitValue()).as(b.output()).isEqualTo(SIGTERM_STATUS);
    assertThat(db.advisoryLockHolders()).isEmpty();
    await("no sessions left").atMost(REBALANCE).until(() -> db.clientSessions() == 0);
  }

  private Copy start(TestDatabase db, String name) {
    Copy copy = new Copy(name, db);
    copies.add(copy);
    return copy;
  }

  private static Map<Integer, Row> owners(TestDatabase db) throws SQLException {
    Map<Integer, Row> out = new TreeMap<>();
    try (Connection c = db.connect();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT partition, member, token, runs FROM partition_owner"
                    + " WHERE to_regclass('partition_owner') IS NOT NULL")) {
      while (rs.next()) {
        out.put(
            rs.getInt(1),
            new Row(rs.getString(2), FencingToken.parse(rs.getString(3)), rs.getLong(4)));
      }
    } catch (SQLException e) {
      if ("42P01".equals(e.getSQLState())) {
        return out; // the first copy has not created the table yet
      }
      throw e;
    }
    return out;
  }

  /** One partition's last recorded run. */
  private record Row(String member, FencingToken token, long runs) {
    boolean newerThan(Row other) {
      return token.isNewerThan(other.token);
    }
  }

  /** A group example JVM and its output. */
  private static final class Copy extends ExampleCopy {

    Copy(String name, TestDatabase db) {
      super("group-example-" + name, PartitionedWorkers.class, db);
    }

    String member() {
      return lines().stream()
          .filter(l -> l.startsWith("member "))
          .map(l -> l.substring("member ".length(), l.indexOf(" of group ")))
          .findFirst()
          .orElseThrow(() -> new AssertionError(name + " printed no member line: " + output()));
    }

    String lastHolding() {
      String last = "";
      for (String line : lines()) {
        if (line.startsWith("holding ")) {
          last = line.substring("holding ".length(), line.indexOf(" partitions"));
        }
      }
      return last;
    }
  }
}
