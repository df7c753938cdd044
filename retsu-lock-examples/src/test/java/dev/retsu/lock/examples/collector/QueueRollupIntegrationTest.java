package dev.retsu.lock.examples.collector;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.micrometer.QueueState;
import dev.retsu.lock.micrometer.QueueStateSnapshot;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The schema and the collector's state query, on real PostgreSQL. */
@ExtendWith(PostgresExtension.class)
class QueueRollupIntegrationTest {

  @BeforeEach
  void schema(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      Schema.migrate(c);
    }
    db.execute("TRUNCATE retsu_queue_message; TRUNCATE retsu_queue_state");
  }

  @Test
  void migrationIsIdempotentAndSafeWhenReplicasStartTogether(TestDatabase db) throws Exception {
    AtomicInteger threads = new AtomicInteger();
    ExecutorService pool =
        Executors.newFixedThreadPool(
            4, r -> new Thread(r, "retsu-lock-examples-test-migrate-" + threads.incrementAndGet()));
    try {
      List<Future<Void>> done = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        Callable<Void> migrate =
            () -> {
              try (Connection c = db.connect()) {
                Schema.migrate(c);
                assertThat(c.getAutoCommit()).isTrue();
              }
              return null;
            };
        done.add(pool.submit(migrate));
      }
      for (Future<Void> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(
            db.queryInts(
                "SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 'retsu_queue_message'::regclass"
                    + " AND NOT tgisinternal"))
        .containsExactly(3);
  }

  @Test
  void theStateQueryReadsTheRollupAndTheOldestReadyAge(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO retsu_queue_message (queue, state, available_at) VALUES"
            + " ('orders', 'ready', now() - interval '90 seconds'),"
            + " ('orders', 'ready', now()),"
            + " ('orders', 'in_flight', now()),"
            + " ('orders', 'scheduled', now() + interval '1 hour'),"
            + " ('emails', 'dead', now())");

    QueueStateSnapshot snapshot;
    try (Connection c = db.connect()) {
      snapshot = QueueStateQuery.read(c);
    }

    assertThat(snapshot.queues()).extracting(QueueState::name).containsExactly("emails", "orders");
    QueueState orders = snapshot.queues().get(1);
    assertThat(orders.ready()).isEqualTo(2);
    assertThat(orders.inFlight()).isEqualTo(1);
    assertThat(orders.scheduled()).isEqualTo(1);
    assertThat(orders.dead()).isZero();
    assertThat(orders.oldestReadyAgeSeconds()).isBetween(89.0, 3600.0);
    QueueState emails = snapshot.queues().get(0);
    assertThat(emails.dead()).isEqualTo(1);
    assertThat(emails.oldestReadyAgeSeconds()).isZero();
  }
}
