package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.fakes.StderrCapture;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.fakes.TestLoops;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A term that ends without this process asking (an operator evicted the leader with {@code
 * pg_terminate_backend}, as the CLI's {@code evict} does) is logged at WARN, where an operator
 * looks; a release this process asked for ({@code close()}) stays at INFO.
 */
@ExtendWith(PostgresExtension.class)
class LossLogIntegrationTest {

  private static final Duration WITHIN = Duration.ofSeconds(20);

  @Test
  void anEvictedLeadersLossIsAWarningAndAGracefulReleaseIsInfo(TestDatabase db) throws Exception {
    String out =
        StderrCapture.during(
            () -> {
              LeaderLoop loop =
                  TestLoops.fast(LeaderLoop.builder(db.dataSource(), TestKeys.next())).build();
              try {
                CompletableFuture<Void> run = loop.start(ctx -> {});
                await().atMost(WITHIN).until(loop::isLeader);
                int evicted = loop.currentTerm().orElseThrow().backendPid();
                assertThat(db.terminateBackend(evicted)).isTrue();
                await()
                    .atMost(WITHIN)
                    .until(
                        () -> loop.currentTerm().map(t -> t.backendPid() != evicted).orElse(false));
                loop.close();
                run.get(WITHIN.toSeconds(), TimeUnit.SECONDS);
              } finally {
                loop.close();
              }
            });
    List<String> ends =
        Arrays.stream(out.split("\n"))
            .filter(l -> l.contains(" Leadership lost (") || l.contains(" Leadership released ("))
            .collect(Collectors.toList());
    assertThat(ends)
        .as("the eviction, then the close")
        .anyMatch(l -> l.contains(" WARN ") && l.contains("Leadership lost (SESSION_LOST"))
        .anyMatch(l -> l.contains(" INFO ") && l.contains("Leadership released (CLOSED)"))
        .noneMatch(l -> l.contains(" INFO ") && l.contains("Leadership lost ("));
  }
}
