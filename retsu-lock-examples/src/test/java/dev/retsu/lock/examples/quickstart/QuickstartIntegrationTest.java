package dev.retsu.lock.examples.quickstart;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.examples.ExampleCopy;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The quickstart as a user runs it: two copies in their own JVMs against one PostgreSQL. One leads
 * (the session PostgreSQL shows holding the lock) and does its job, the other does not; SIGTERM on
 * the leader runs the shutdown hook, which closes the loop, so the lock is released, the process
 * exits and the other copy takes over with a newer fencing token.
 */
@ExtendWith(PostgresExtension.class)
class QuickstartIntegrationTest {

  private static final Duration STARTUP = Duration.ofSeconds(90);

  /** Retry interval 5 s (jitter only shortens a wait), plus time for a JVM that is busy exiting. */
  private static final Duration TAKEOVER = Duration.ofSeconds(30);

  /** What a JVM ended by SIGTERM exits with once its shutdown hooks are done: 128 + 15. */
  private static final int SIGTERM_STATUS = 143;

  private static final Pattern LEADING =
      Pattern.compile("^leading: fencing token ([A-T0-9]+), backend pid (\\d+)$");

  private final List<Copy> copies = new ArrayList<>();

  @AfterEach
  void killCopies() {
    copies.forEach(Copy::close);
  }

  @Test
  void oneCopyLeadsAndOnSigtermItReleasesTheLockExitsAndTheOtherTakesOver(TestDatabase db)
      throws Exception {
    Copy a = start(db, "a");
    Copy b = start(db, "b");
    await("a leader")
        .atMost(STARTUP)
        .until(() -> a.leading().isPresent() || b.leading().isPresent());
    Copy leader = a.leading().isPresent() ? a : b;
    Copy standby = leader == a ? b : a;
    Leading first = leader.leading().orElseThrow();
    await("the leader's job").atMost(TAKEOVER).until(() -> leader.logged("job done: "));
    assertThat(db.advisoryLockHolders()).containsExactly(first.backendPid());

    // The standby is up; for longer than its retry interval it tries and does not lead.
    await("the standby's loop").atMost(STARTUP).until(() -> standby.logged("Leader loop started"));
    await("the standby standing by")
        .during(Duration.ofSeconds(6))
        .atMost(Duration.ofSeconds(20))
        .until(() -> standby.leading().isEmpty() && !standby.logged("job done: "));

    leader.process.toHandle().destroy(); // SIGTERM, as Ctrl-C or a deployment stop

    await("the leader exits").atMost(TAKEOVER).until(leader::exitedAndDrained);
    assertThat(leader.process.exitValue()).as(leader.output()).isEqualTo(SIGTERM_STATUS);
    assertThat(leader.logged("stopped leading: CLOSED")).as(leader.output()).isTrue();
    assertThat(leader.output()).doesNotContain("leader loop failed");
    await("the standby takes over").atMost(TAKEOVER).until(() -> standby.leading().isPresent());
    Leading second = standby.leading().orElseThrow();
    assertThat(second.token().isNewerThan(first.token())).as(second + " after " + first).isTrue();
    await("its job").atMost(TAKEOVER).until(() -> standby.logged("job done: "));
    assertThat(db.advisoryLockHolders()).containsExactly(second.backendPid());

    standby.process.toHandle().destroy();

    await("the second copy exits").atMost(TAKEOVER).until(standby::exitedAndDrained);
    assertThat(standby.process.exitValue()).as(standby.output()).isEqualTo(SIGTERM_STATUS);
    assertThat(standby.logged("stopped leading: CLOSED")).as(standby.output()).isTrue();
    assertThat(db.advisoryLockHolders()).isEmpty();
    // The hook closed the pool too: no session of either copy is left behind.
    await("no sessions left").atMost(TAKEOVER).until(() -> db.clientSessions() == 0);
  }

  private Copy start(TestDatabase db, String name) {
    Copy copy = new Copy(name, db);
    copies.add(copy);
    return copy;
  }

  /** One leading line: the term's fencing token and the backend pid of the lock's session. */
  private record Leading(FencingToken token, int backendPid) {}

  /** A quickstart JVM and its output. */
  private static final class Copy extends ExampleCopy {

    Copy(String name, TestDatabase db) {
      super("quickstart-" + name, Quickstart.class, db);
    }

    Optional<Leading> leading() {
      for (String line : lines()) {
        Matcher m = LEADING.matcher(line);
        if (m.matches()) {
          return Optional.of(
              new Leading(FencingToken.parse(m.group(1)), Integer.parseInt(m.group(2))));
        }
      }
      return Optional.empty();
    }
  }
}
