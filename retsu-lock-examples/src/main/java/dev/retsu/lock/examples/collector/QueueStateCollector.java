package dev.retsu.lock.examples.collector;

import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.micrometer.LeaderMetrics;
import dev.retsu.lock.micrometer.QueueStateMetrics;
import dev.retsu.lock.micrometer.QueueStateSnapshot;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

// snippet:examples/collector
/**
 * The queue state-metrics collector, wired: a {@link LeaderLoop} on the collector's fixed key,
 * leadership metrics on every replica, and queue gauges that only the leader exports, filled by the
 * state query on the lock's own session. This is the part to copy; the {@code collector} command
 * adds a process around it (the pool, the management endpoint, signals and exit statuses).
 *
 * <p>A failed refresh ends the term under {@link FailurePolicy#EXIT}: {@link #run()} throws, and
 * the process exits with status 1 so that its supervisor restarts it while a standby takes over.
 */
public final class QueueStateCollector implements AutoCloseable {

  /** The collector's lock: a fixed two-part key, ('RETS', 1). Never reuse it for other jobs. */
  public static final LockKey KEY = LockKey.of(0x52455453, 1); // Schema.KEY_NAMESPACE

  /** The {@code lock} tag of the leadership metrics. */
  public static final String LOCK_NAME = "queue-state-collector";

  private static final Logger LOG = LoggerFactory.getLogger(QueueStateCollector.class);

  private final LeaderMetrics leadership;
  private final QueueStateMetrics queueGauges;
  private final LeaderLoop loop;

  /**
   * Wires the collector and binds its meters; nothing runs before {@link #run()} or {@link
   * #start()}.
   *
   * @param pool where sessions come from, e.g. HikariCP; the leader keeps one for its whole term
   * @param registry where the leadership metrics and the queue gauges are exported
   * @param candidateId this replica's name in logs, metrics and {@code application_name}
   * @param interval the standby retry interval and the leader refresh interval
   * @param takeover how standbys wait for the lock
   * @param log one more listener, for the lines operators grep for
   */
  public QueueStateCollector(
      DataSource pool,
      MeterRegistry registry,
      String candidateId,
      Duration interval,
      TakeoverMode takeover,
      LeaderListener log) {
    loop =
        LeaderLoop.builder(pool, KEY)
            .candidateId(candidateId)
            .retryInterval(interval)
            .refreshInterval(interval)
            .takeover(takeover)
            .failurePolicy(FailurePolicy.EXIT) // a failed refresh ends run(): the process exits 1
            .listener(log)
            .build();
    leadership = LeaderMetrics.builder(loop).lockName(LOCK_NAME).build();
    queueGauges = QueueStateMetrics.of(loop);
    leadership.bindTo(registry); // on every replica; subscribes to the loop
    queueGauges.bindTo(registry); // gauges only while leading, removed before the lock is released
  }

  /** One refresh of the leader: read the queue state, then export it. */
  private void refresh(LeaderContext ctx) throws SQLException {
    // The state query runs on the session that holds the lock, never on another one.
    QueueStateSnapshot snapshot = QueueStateQuery.read(ctx.connection());
    ctx.ensureLeader(); // right before the effect: throws once this term is over
    if (!queueGauges.record(snapshot)) {
      LOG.warn("[candidate={}] Term ended during the refresh; not exported", loop.candidateId());
    }
  }

  /**
   * Runs the loop on the calling thread until {@link #close()}.
   *
   * @throws dev.retsu.lock.LeadershipLostException when a term fails (the policy is EXIT)
   * @throws dev.retsu.lock.AdvisoryLockException when the database fails at the first attempt
   */
  public void run() {
    loop.run(this::refresh);
  }

  /**
   * Runs the loop on a new daemon thread; see {@link LeaderLoop#start(dev.retsu.lock.LeaderTask)}.
   *
   * @return completes when the loop stops, exceptionally with what {@link #run()} would throw
   */
  public CompletableFuture<Void> start() {
    return loop.start(this::refresh);
  }

  /**
   * Returns the loop, for its state, its term and the lock's holder.
   *
   * @return the loop
   */
  public LeaderLoop loop() {
    return loop;
  }

  /**
   * Returns whether this replica exports queue gauges right now.
   *
   * @return true from the first good refresh of a term until the term ends
   */
  public boolean isExporting() {
    return queueGauges.isExporting();
  }

  /** Stops the loop, which releases the lock at once, then removes every meter. Idempotent. */
  @Override
  public void close() {
    loop.close();
    queueGauges.close();
    leadership.close();
  }
}
// end-snippet
