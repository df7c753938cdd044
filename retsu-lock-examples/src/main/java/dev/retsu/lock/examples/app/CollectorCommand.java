package dev.retsu.lock.examples.app;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.examples.collector.QueueStateCollector;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.examples.http.LeaderStatus;
import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.testing.EmbeddedPostgresServer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code collector} command: one replica of the queue state-metrics collector as a process, as
 * the Retsu worker runs it. The election and the metrics are {@link QueueStateCollector}'s; this
 * class adds what a process needs around it: the pool (or an embedded PostgreSQL), the schema, a
 * Prometheus registry with JVM metrics, the management endpoint, the log lines operators grep for,
 * signals and exit statuses.
 *
 * <p>A failed refresh or an initial database error stops the management endpoint and exits with
 * status 1, so the deployment restarts it and a standby takes over; SIGTERM or Ctrl-C closes the
 * loop, which releases the lock at once, and exits with status 0.
 */
public final class CollectorCommand {

  /** The line operators grep for; logged exactly like this when a term starts. */
  public static final String ACQUIRED_LINE = "queue state metrics collector leadership acquired";

  /** Logged once the endpoint is up and the replica starts contending. */
  public static final String STARTED_LINE = "Queue state collector started";

  private static final Logger LOG = LoggerFactory.getLogger(CollectorCommand.class);

  private final Settings.Collector settings;
  private final AtomicBoolean exitingWithFailure = new AtomicBoolean();
  private final ReentrantLock cleanupLock = new ReentrantLock();
  private boolean cleanedUp;
  private volatile EmbeddedPostgresServer embedded;
  private volatile HikariDataSource pool;
  private volatile ManagementServer management;
  private volatile QueueStateCollector collector;

  CollectorCommand(Settings.Collector settings) {
    this.settings = settings;
  }

  /**
   * Runs the worker until it is stopped or fails.
   *
   * @return the process exit status: 0 after a stop request, 1 after a failure
   */
  int run() {
    Thread hook = new Thread(this::onShutdownSignal, "retsu-lock-examples-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    settings.parentPid().ifPresent(this::exitWithParent);
    try {
      return runWorker();
    } catch (RuntimeException | Error e) {
      // Anything unexpected is a failure too: exit 1, never 0 through the shutdown hook.
      LOG.error("Collector failed; exiting with status 1", e);
      return fail();
    } finally {
      cleanup();
    }
  }

  private int runWorker() {
    String candidate = settings.candidateId().orElseGet(AdvisoryLock::defaultCandidateId);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new ClassLoaderMetrics().bindTo(registry);
    new JvmMemoryMetrics().bindTo(registry);
    new JvmGcMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    new FileDescriptorMetrics().bindTo(registry);

    try {
      pool = openPool(registry);
      try (Connection c = pool.getConnection()) {
        Schema.migrate(c);
      }
    } catch (SQLException | RuntimeException e) {
      LOG.error(
          "Initial database error; exiting with status 1 so that the deployment restarts this"
              + " worker: {}",
          e.toString());
      return fail();
    }

    QueueStateCollector queueStateCollector =
        new QueueStateCollector(
            pool,
            registry,
            candidate,
            settings.interval(),
            settings.takeover(),
            new LogListener(candidate));
    collector = queueStateCollector;

    try {
      management =
          ManagementServer.start(
              settings.managementAddress(),
              settings.managementPort(),
              registry,
              this::leaderJson,
              () -> LeaderStatus.isReady(queueStateCollector.loop()));
    } catch (IOException e) {
      LOG.error(
          "Cannot serve the management endpoint on {}:{} (RETSU_WORKER__MANAGEMENT__PORT): {};"
              + " exiting with status 1",
          settings.managementAddress(),
          settings.managementPort(),
          e.toString());
      return fail();
    }

    LOG.info(
        "[candidate={}] {}: lock {}, interval {}, takeover {}, pool size {}",
        candidate,
        STARTED_LINE,
        QueueStateCollector.KEY,
        Options.format(settings.interval()),
        settings.takeover(),
        settings.database().poolSize());
    try {
      queueStateCollector.run();
    } catch (LeadershipLostException e) {
      LOG.error(
          "[candidate={}] Leadership lost ({}{}); stopping the management endpoint and exiting"
              + " with status 1 so that no stale queue state is exported",
          candidate,
          e.reason(),
          e.sqlState().map(s -> ", SQLState " + s).orElse(""));
      return fail();
    } catch (AdvisoryLockException e) {
      LOG.error(
          "[candidate={}] Database error{}; exiting with status 1: {}",
          candidate,
          e.sqlState().map(s -> " (SQLState " + s + ")").orElse(""),
          e.getMessage());
      return fail();
    }
    return 0;
  }

  private int fail() {
    exitingWithFailure.set(true);
    cleanup();
    return 1;
  }

  private HikariDataSource openPool(PrometheusMeterRegistry registry) {
    Settings.Database db = settings.database();
    String url;
    String user;
    Optional<String> password;
    if (db.url().isPresent()) {
      url = db.url().get();
      user = db.user().orElse(null);
      password = db.password();
    } else {
      LOG.info(
          "RETSU_DATABASE__URL is not set: starting an embedded PostgreSQL for this process only"
              + " (its data is discarded at exit; set RETSU_DATABASE__URL to share one database"
              + " between collectors)");
      embedded = EmbeddedPostgresServer.builder().start();
      url = embedded.jdbcUrl("postgres");
      user = embedded.user();
      password = Optional.empty();
      LOG.info("Embedded PostgreSQL is up: {}", url);
    }
    HikariConfig config = new HikariConfig();
    config.setPoolName("retsu-lock-examples-db");
    config.setJdbcUrl(url);
    if (user != null) {
      config.setUsername(user);
    }
    password.ifPresent(config::setPassword);
    config.setMaximumPoolSize(db.poolSize());
    // Fixed-size (minimumIdle unset, HikariCP's default): the leader keeps one connection for its
    // whole term and its end evicts it; HikariCP refills evicted connections only up to
    // minimumIdle, so a smaller minimumIdle can leave a waiting thread without one. Sized to what
    // the process uses (the lock's session and a few more), not larger: when a process dies, every
    // connection it held is a backend that exits at the same moment as the leader's, and on a small
    // server those exits delay the standby's grant.
    config.setConnectionTimeout(Duration.ofSeconds(10).toMillis());
    config.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(registry));
    return new HikariDataSource(config);
  }

  /** The body of {@code /leader}. */
  private String leaderJson() {
    QueueStateCollector c = collector;
    return LeaderStatus.json(c.loop(), c.isExporting(), settings.interval(), settings.takeover());
  }

  /** SIGTERM, Ctrl-C, or System.exit: release the lock at once and exit 0 (unless failing). */
  private void onShutdownSignal() {
    if (exitingWithFailure.get()) {
      return; // exiting with status 1 on purpose; cleanup is done
    }
    LOG.info("Stop requested: closing the leader loop, which releases the lock at once");
    QueueStateCollector c = collector;
    if (c == null) {
      // Still starting (an embedded server may be half up): no lock is held, so let the JVM end
      // as a signalled one does, after every other hook (the embedded server's among them) ran.
      cleanup();
      return;
    }
    c.close();
    cleanup();
    if (!exitingWithFailure.get()) {
      // A JVM stopped by SIGTERM exits with 143; a requested stop that went well is a success.
      Runtime.getRuntime().halt(0);
    }
  }

  private void exitWithParent(long pid) {
    Optional<ProcessHandle> parent = ProcessHandle.of(pid);
    if (parent.isEmpty()) {
      LOG.warn("Parent process {} is gone; stopping", pid);
      System.exit(0);
    }
    parent
        .get()
        .onExit()
        .thenRun(
            () -> {
              LOG.warn("Parent process {} exited; stopping", pid);
              System.exit(0);
            });
  }

  /** Stops the endpoint, the collector, the pool and an embedded server, once, in that order. */
  private void cleanup() {
    cleanupLock.lock();
    try {
      if (cleanedUp) {
        return;
      }
      cleanedUp = true;
      ManagementServer m = management;
      if (m != null) {
        m.close();
      }
      QueueStateCollector c = collector;
      if (c != null) {
        c.close();
      }
      HikariDataSource p = pool;
      if (p != null) {
        p.close();
      }
      EmbeddedPostgresServer pg = embedded;
      if (pg != null) {
        pg.close();
      }
    } catch (RuntimeException e) {
      LOG.warn("Cleanup failed", e);
    } finally {
      cleanupLock.unlock();
    }
  }

  /** Logs the line operators grep for, and why every term ends. */
  private static final class LogListener implements LeaderListener {
    private final String candidate;

    LogListener(String candidate) {
      this.candidate = candidate;
    }

    @Override
    public void onAcquired(Term term) {
      LOG.info(ACQUIRED_LINE);
      LOG.info(
          "[candidate={}] Leading term {} with fencing token {} on backend pid {}",
          candidate,
          term.number(),
          term.fencingToken(),
          term.backendPid());
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      if (reason == LossReason.CLOSED) {
        LOG.info(
            "queue state metrics collector leadership released: {} (term {}, stop requested)",
            reason,
            term.number());
      } else {
        LOG.warn(
            "queue state metrics collector leadership lost: {} (term {}){}",
            reason,
            term.number(),
            cause == null ? "" : ": " + cause);
      }
    }
  }
}
