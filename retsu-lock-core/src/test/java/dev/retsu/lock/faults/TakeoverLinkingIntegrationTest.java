package dev.retsu.lock.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ProcessOutput;
import dev.retsu.lock.testing.TestDatabase;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A waiting standby's takeover runs code that is already linked: between the moment its session
 * waits for the lock and its first task past {@code ensureLeader()}, its JVM loads no class of this
 * library or of pgjdbc and spins no lambda or method-handle class (string concatenation, lambdas
 * and method references link on their first run, and a standby's first run of the leader path is
 * the takeover). Measured in the failover benchmark, that linking cost about 7 ms of a WAIT
 * takeover before it was removed. The child logs class loading ({@code -Xlog:class+load}) on the
 * same stream as its markers.
 */
@ExtendWith(PostgresExtension.class)
class TakeoverLinkingIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(60);

  /** A class loaded by the takeover that a warm standby should already have. */
  private static final Pattern LINKED_AT_TAKEOVER =
      Pattern.compile(
          "^(dev\\.retsu\\.lock\\.\\S+|org\\.postgresql\\.\\S+"
              + "|\\S*LambdaForm\\$\\S+|\\S*\\$\\$Lambda\\S*) source:.*");

  @Test
  void aWaitingStandbysTakeoverLoadsNoLibraryClassAndSpinsNoLambda(TestDatabase db)
      throws Exception {
    LockKey key = LockKey.of(TestKeys.nextValue());
    AdvisoryLockLease holder = AdvisoryLock.of(db.dataSource(), key).tryAcquire().orElseThrow();
    String id = "linking-" + Long.toHexString(TestKeys.nextValue());
    List<String> lines = new CopyOnWriteArrayList<>();
    Process child =
        new ProcessBuilder(
                FaultCandidate.javaCommand(
                    List.of("-Xlog:class+load=info:stdout:none"),
                    WaitingChild.class,
                    db.jdbcUrl(),
                    db.user(),
                    Long.toString(key.value()),
                    id))
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start();
    try {
      ProcessOutput.follow(child, "retsu-lock-test-child-reader", lines::add);
      // The standby's session waits for the lock on the server.
      await()
          .atMost(WITHIN)
          .until(
              () ->
                  db.queryInts(
                              "SELECT count(*)::int FROM pg_stat_activity WHERE application_name"
                                  + " = ? AND wait_event_type = 'Lock'",
                              "retsu-lock:" + id)
                          .get(0)
                      == 1);
      OutputStream toChild = child.getOutputStream();
      toChild.write("MARK\n".getBytes(StandardCharsets.UTF_8));
      toChild.flush();
      await().atMost(WITHIN).until(() -> lines.contains("MARK"));

      holder.close();
      await().atMost(WITHIN).until(() -> lines.contains("REFRESHED"));

      List<String> before = lines.subList(0, lines.indexOf("MARK"));
      List<String> takeover = lines.subList(lines.indexOf("MARK"), lines.indexOf("REFRESHED"));
      // The log works: starting the standby loaded the library and spun lambdas.
      assertThat(before).anyMatch(l -> LINKED_AT_TAKEOVER.matcher(l).matches());
      assertThat(before)
          .as("the pattern matches pgjdbc's class loads too")
          .anyMatch(
              l -> l.startsWith("org.postgresql.") && LINKED_AT_TAKEOVER.matcher(l).matches());
      assertThat(takeover)
          .as("classes loaded between the wait and the first task past ensureLeader()")
          .noneMatch(l -> LINKED_AT_TAKEOVER.matcher(l).matches());
    } finally {
      child.destroyForcibly().waitFor();
      holder.close();
    }
  }
}
