package dev.retsu.lock.examples.app;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockHolder;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.examples.collector.QueueStateQuery;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.examples.http.Json;
import dev.retsu.lock.examples.http.ManagementServer;
import dev.retsu.lock.micrometer.LeaderMetrics;
import dev.retsu.lock.micrometer.QueueStateMetrics;
import dev.retsu.lock.micrometer.QueueStateSnapshot;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The queue state-metrics collector worker, as the Retsu worker runs it: every replica contends for
 * one advisory lock; the leader reads the queue-state rollup on the lock's own session every
 * interval and exports the queue gauges; standbys retry every interval and export only generic and
 * leadership metrics. A failed refresh or an initial database error stops the management endpoint
 * and exits with status 1, so the deployment restarts it and a standby takes over; SIGTERM or
 * Ctrl-C closes the loop, which releases the lock at once, and exits with status 0.
 */
public final class CollectorCommand {

  /** The collector's lock: a fixed two-part key, ('RETS', 1). Never reuse it for other jobs. */
  public static final LockKey KEY = LockKey.of(Schema.KEY_NAMESPACE, 1);

  /** The line operators grep for; logged exactly like this when a term starts. */
  public static final String ACQUIRED_LINE = "queue state metrics collector leadership acquired";

  static final String LOCK_NAME = "queue-state-collector";

  private static final Logger LOG = LoggerFactory.getLogger(CollectorCommand.class);

  private final Settings.Collector settings;
  private final AtomicBoolean exitingWithFailure = new AtomicBoolean();
  private final ReentrantLock cleanupLock = new ReentrantLock();
  private boolean cleanedUp;
  private volatile EmbeddedPostgresServer embedded;
  private volatile HikariDataSource pool;
  private volatile ManagementServer management;
  private volatile LeaderLoop loop;
  private volatile QueueStateMetrics queueMetrics;
  private volatile LeaderMetrics leaderMetrics;

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

    leaderMetrics = LeaderMetrics.builder(KEY, candidate).lockName(LOCK_NAME).build();
    leaderMetrics.bindTo(registry);
    queueMetrics = QueueStateMetrics.create();
    queueMetrics.bindTo(registry);
    QueueStateMetrics gauges = queueMetrics;
    LeaderLoop leaderLoop =
        LeaderLoop.builder(pool, KEY)
            .candidateId(candidate)
            .retryInterval(settings.interval())
            .refreshInterval(settings.interval())
            .takeover(settings.takeover())
            .failurePolicy(FailurePolicy.EXIT)
            .listener(new LogListener(candidate))
            .listener(leaderMetrics)
            .listener(queueMetrics)
            .build();
    loop = leaderLoop;

    try {
      management =
          ManagementServer.start(
              settings.managementAddress(),
              settings.managementPort(),
              registry,
              this::leaderJson,
              this::ready);
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
        "[candidate={}] Queue state collector started: lock {}, interval {}, takeover {}, pool"
            + " size {}",
        candidate,
        KEY,
        Options.format(settings.interval()),
        settings.takeover(),
        settings.database().poolSize());
    try {
      leaderLoop.run(
          context -> {
            QueueStateSnapshot snapshot = context.withConnection(QueueStateQuery::read);
            context.ensureLeader();
            if (!gauges.record(snapshot)) {
              LOG.warn("[candidate={}] Term ended during the refresh; not exported", candidate);
            }
          });
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
    // Up to poolSize connections, opened on demand: the leader keeps one for its whole term, a
    // standby borrows one per attempt and gives it back; idle replicas need not hold ten.
    config.setMinimumIdle(Math.min(2, db.poolSize()));
    config.setConnectionTimeout(Duration.ofSeconds(10).toMillis());
    config.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(registry));
    return new HikariDataSource(config);
  }

  private boolean ready() {
    LeaderLoop l = loop;
    if (l == null) {
      return false;
    }
    return l.state() == LeaderLoop.State.RUNNING;
  }

  /** The body of {@code /leader}. */
  String leaderJson() {
    LeaderLoop l = loop;
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("candidate", l.candidateId());
    Optional<Term> term = l.currentTerm();
    String role =
        switch (l.state()) {
          case NEW -> "starting";
          case CLOSED -> "stopped";
          case FAILED -> "failed";
          default -> l.isLeader() ? "leader" : "standby";
        };
    out.put("role", role);
    out.put("lock", KEY.toString());
    out.put("term", term.map(Term::number).orElse(null));
    out.put("fencingToken", term.map(t -> t.fencingToken().toString()).orElse(null));
    out.put("leaderSince", term.map(t -> t.start().toString()).orElse(null));
    out.put("backendPid", term.map(Term::backendPid).orElse(null));
    out.put("exportingQueueState", queueMetrics != null && queueMetrics.isExporting());
    try {
      Optional<LockHolder> holder = l.currentHolder();
      out.put(
          "holder",
          holder
              .map(
                  h -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("pid", h.pid());
                    m.put("candidate", h.candidateId().orElse(null));
                    m.put("applicationName", h.applicationName());
                    m.put("clientAddress", h.clientAddress().orElse(null));
                    m.put("database", h.database());
                    return m;
                  })
              .orElse(null));
    } catch (AdvisoryLockException e) {
      out.put("holder", null);
      out.put("holderError", e.getMessage());
    }
    out.put("intervalSeconds", settings.interval().toMillis() / 1000.0);
    out.put("takeover", settings.takeover().name().toLowerCase(java.util.Locale.ROOT));
    return Json.object(out);
  }

  /** SIGTERM, Ctrl-C, or System.exit: release the lock at once and exit 0 (unless failing). */
  private void onShutdownSignal() {
    if (exitingWithFailure.get()) {
      return; // exiting with status 1 on purpose; cleanup is done
    }
    LOG.info("Stop requested: closing the leader loop, which releases the lock at once");
    LeaderLoop l = loop;
    if (l == null) {
      // Still starting (an embedded server may be half up): no lock is held, so let the JVM end
      // as a signalled one does, after every other hook (the embedded server's among them) ran.
      cleanup();
      return;
    }
    l.close();
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

  /** Stops the endpoint, the loop, the pool and an embedded server, once, in that order. */
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
      LeaderLoop l = loop;
      if (l != null) {
        l.close();
      }
      if (queueMetrics != null) {
        queueMetrics.close();
      }
      if (leaderMetrics != null) {
        leaderMetrics.close();
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
