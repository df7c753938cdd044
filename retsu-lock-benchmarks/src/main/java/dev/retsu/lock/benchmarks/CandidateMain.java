package dev.retsu.lock.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.shedlock.RetsuLockProvider;
import dev.retsu.lock.spring.integration.RetsuLeaderInitiator;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.apache.commons.dbcp2.BasicDataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * One candidate in its own JVM, for the failover and idle-cost benchmarks. Runs retsu-lock,
 * ShedLock or Spring Integration and prints one line per event on stdout, each with the wall-clock
 * time in epoch microseconds ({@link Clock#systemUTC()}), the one time base that the parent and
 * every child on this machine share:
 *
 * <pre>
 * START &lt;micros&gt; &lt;impl&gt;          the process runs (links this printer before any fault)
 * READY &lt;micros&gt;                 after the first attempt to take the lock
 * ACQUIRED &lt;micros&gt; &lt;pid|-&gt;        a term starts (backend pid for retsu)
 * REFRESH &lt;micros&gt;               the leader's work ran (first one right after ACQUIRED)
 * LOST &lt;micros&gt; &lt;reason&gt;         the term ends, as this process sees it
 * HOOK &lt;micros&gt; &lt;nanoTime&gt;       retsu and the raw waiter: the shutdown hook starts
 * EXIT &lt;micros&gt; &lt;reason&gt;         the process ends
 * </pre>
 *
 * <p>Arguments are {@code name=value} pairs; see {@link CandidateSpec}.
 */
public final class CandidateMain {

  private static final PrintStream OUT =
      new PrintStream(
          new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
  private static final Clock CLOCK = Clock.systemUTC();

  private CandidateMain() {}

  /**
   * Runs one candidate until it is stopped (SIGTERM), killed, or its term ends under the EXIT
   * policy.
   *
   * @param args {@code name=value} pairs
   * @throws Exception when the candidate cannot start
   */
  public static void main(String[] args) throws Exception {
    CandidateSpec spec = CandidateSpec.parse(args);
    // The first line printed links emitAt's string concatenations (a few ms, once per JVM). A WAIT
    // standby may print nothing before its grant, so without this line that cost would land in
    // the measured takeover, charged to the library instead of this harness.
    emit("START", spec.impl().name());
    switch (spec.impl()) {
      case RETSU -> runRetsu(spec);
      case SHEDLOCK -> runShedLock(spec, jdbcShedLock(spec), name -> "-");
      case RETSU_SHEDLOCK -> runRetsuShedLock(spec);
      case SPRING -> runSpring(spec);
      case RETSU_SPRING -> runRetsuSpring(spec);
      case RAW -> runRaw(spec);
    }
  }

  static long nowMicros() {
    return micros(CLOCK.instant());
  }

  private static long micros(Instant t) {
    return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
  }

  private static void emit(String event, String detail) {
    emitAt(event, nowMicros(), detail);
  }

  private static synchronized void emitAt(String event, long micros, String detail) {
    OUT.println(event + " " + micros + (detail.isEmpty() ? "" : " " + detail));
  }

  // ---------------------------------------------------------------- raw pg_advisory_lock

  /**
   * The physical limit: a plain JDBC session blocked in {@code pg_advisory_lock}, with server
   * keepalives like retsu's (from the spec) so a partitioned leader's lock is freed too. It has no
   * fencing token, no self-fencing and no ownership checks: a baseline for takeover time, not a
   * safe leader.
   */
  private static void runRaw(CandidateSpec spec) throws Exception {
    DataSource ds = dataSource(spec, "bench:" + spec.id());
    java.sql.Connection c = ds.getConnection();
    boolean pooled = !spec.pool().equals("plain");
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  hook();
                  try {
                    emit("LOST", "CLOSED"); // it stops acting before its session ends
                    if (pooled) {
                      // A pooled connection outlives close(): what a pool's user does is unlock,
                      // then hand the connection back and close the pool.
                      try (java.sql.Statement u = c.createStatement()) {
                        u.execute("SELECT pg_advisory_unlock(" + spec.key() + ")");
                      }
                    }
                    c.close();
                  } catch (java.sql.SQLException e) {
                    // the process is ending; the server frees the lock with the session
                  } finally {
                    closePool(ds);
                  }
                },
                "retsu-lock-bench-raw-shutdown"));
    long idle = spec.keepaliveIdle().toSeconds();
    long interval = spec.keepaliveInterval().toSeconds();
    int count = spec.keepaliveCount();
    try (java.sql.Statement s = c.createStatement()) {
      s.execute(
          String.format(
              java.util.Locale.ROOT,
              "SELECT set_config('tcp_keepalives_idle', '%d', false),"
                  + " set_config('tcp_keepalives_interval', '%d', false),"
                  + " set_config('tcp_keepalives_count', '%d', false),"
                  + " set_config('tcp_user_timeout', '%d', false)",
              idle,
              interval,
              count,
              (idle + interval * count) * 1000));
      emit("READY", "");
      int pid;
      try (java.sql.ResultSet rs =
          s.executeQuery("SELECT pg_backend_pid() FROM pg_advisory_lock(" + spec.key() + ")")) {
        rs.next();
        pid = rs.getInt(1);
      }
      emit("TOKEN", "");
      emit("ACQUIRED", Integer.toString(pid));
      while (true) {
        emit("REFRESH", "");
        Thread.sleep(spec.refresh().toMillis());
        s.execute("SELECT 1");
      }
    } catch (java.sql.SQLException e) {
      emit("LOST", "SESSION_LOST");
      emit("EXIT", "SESSION_LOST");
      System.exit(3);
    }
  }

  // ---------------------------------------------------------------- retsu-lock

  private static void runRetsu(CandidateSpec spec) {
    DataSource ds = dataSource(spec, "bench:" + spec.id());
    AtomicBoolean ready = new AtomicBoolean();
    LeaderLoopBuilder builder =
        LeaderLoop.builder(ds, LockKey.of(spec.key()))
            .candidateId(spec.id())
            .retryInterval(spec.retry())
            .refreshInterval(spec.refresh())
            .failurePolicy(FailurePolicy.EXIT)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
                    // A WAIT standby's first attempt ends at its grant: ACQUIRED follows at once,
                    // and a line printed here would sit in the takeover the raw waiter is
                    // compared with (the parent sees a WAIT standby ready in pg_stat_activity).
                    if (result != AttemptResult.ACQUIRED && ready.compareAndSet(false, true)) {
                      emit("READY", "");
                    }
                  }

                  @Override
                  public void onAcquired(Term term) {
                    // Term.start(): stamped by the library once the lock was granted and the
                    // fencing token taken, before any listener; ACQUIRED is this listener's call.
                    emitAt("TOKEN", micros(term.start()), "");
                    emit("ACQUIRED", Integer.toString(term.backendPid()));
                  }

                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    emit("LOST", reason.name());
                  }
                });
    if (spec.fast()) {
      builder.fastFailover(); // its own retry interval (POLL) and safety knobs
    } else if (spec.selfFenceAfter() != null) {
      builder.timing(
          FailoverTiming.DEFAULT
              .withHeartbeatInterval(spec.heartbeat())
              .withServerKeepalives(
                  spec.keepaliveIdle(), spec.keepaliveInterval(), spec.keepaliveCount())
              .withServerIdleSessionTimeout(spec.idleSessionTimeout())
              .withSelfFenceAfter(spec.selfFenceAfter()));
    }
    RetsuTakeover.apply(builder, spec.mode());
    LeaderLoop loop = builder.build();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  hook();
                  loop.close();
                  closePool(ds); // an application closes its pool after its leader loop
                },
                "retsu-lock-bench-shutdown"));
    try {
      loop.run(
          ctx -> {
            ctx.ensureLeader(); // a leader acts only after the check, as users are told to
            emit("REFRESH", "");
          });
      emit("EXIT", "STOPPED");
    } catch (LeadershipLostException e) {
      emit("EXIT", e.reason().name());
      System.exit(3);
    }
  }

  /**
   * Prints {@code HOOK <micros> <nanoTime>} when the shutdown hook starts: the wall clock and this
   * JVM's monotonic clock at one moment, so that a class-load trace stamped with the monotonic
   * clock ({@code -Xlog:class+load:...:timenanos}) can be lined up with the other processes'
   * wall-clock events.
   */
  private static void hook() {
    long nanos = System.nanoTime();
    emitAt("HOOK", nowMicros(), Long.toString(nanos));
  }

  /**
   * The data source retsu or the raw waiter borrows from, as an application would set it up: the
   * pool's defaults, only the URL, user and application name set.
   */
  static DataSource dataSource(CandidateSpec spec, String applicationName) {
    switch (spec.pool()) {
      case "hikari" -> {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(spec.url());
        config.setUsername(spec.user());
        config.setPoolName("bench-" + spec.id());
        config.addDataSourceProperty("ApplicationName", applicationName);
        return new HikariDataSource(config);
      }
      case "dbcp2" -> {
        BasicDataSource pool = new BasicDataSource();
        pool.setUrl(spec.url());
        pool.setUsername(spec.user());
        pool.setConnectionProperties("ApplicationName=" + applicationName);
        return pool;
      }
      default -> {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(spec.url());
        ds.setUser(spec.user());
        ds.setApplicationName(applicationName);
        return ds;
      }
    }
  }

  private static void closePool(DataSource ds) {
    try {
      if (ds instanceof AutoCloseable pool) {
        pool.close();
      }
    } catch (Exception e) {
      System.err.println("closing the pool failed: " + e);
    }
  }

  // ---------------------------------------------------------------- ShedLock

  private static HikariDataSource pool(CandidateSpec spec) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(spec.url());
    config.setUsername(spec.user());
    config.setMaximumPoolSize(2);
    // minimumIdle 1, as the published idle-cost figures were measured; one task thread borrows
    // here, so the starved waiter of HikariPoolRefillIntegrationTest cannot arise
    config.setMinimumIdle(1);
    config.setPoolName("bench-" + spec.id());
    config.addDataSourceProperty("ApplicationName", "bench:" + spec.id());
    return new HikariDataSource(config);
  }

  /**
   * ShedLock as a leader lock: a task runs every retry interval. A standby tries {@code lock()}
   * with {@code lockAtMostFor = ttl}; the holder extends the same lock every interval (what
   * ShedLock's KeepAliveLockProvider does at half of lockAtMostFor) and counts as leader until its
   * last successful extension plus the ttl, measured from the start of that call.
   */
  private static ExtensibleLockProvider jdbcShedLock(CandidateSpec spec) {
    return new JdbcTemplateLockProvider(
        JdbcTemplateLockProvider.Configuration.builder()
            .withJdbcTemplate(new JdbcTemplate(pool(spec)))
            .usingDbTime()
            .withLockedByValue(spec.id())
            .build());
  }

  /**
   * The same ShedLock leader on retsu-lock-shedlock's provider: a held lock is a session, so the
   * ACQUIRED line names its backend pid (terminate ends that session only).
   */
  private static void runRetsuShedLock(CandidateSpec spec) throws InterruptedException {
    RetsuLockProvider provider =
        RetsuLockProvider.builder(pool(spec)).candidateId(spec.id()).build();
    runShedLock(
        spec,
        provider,
        name -> provider.lease(name).map(l -> Integer.toString(l.backendPid())).orElse("-"));
  }

  private static void runShedLock(
      CandidateSpec spec,
      ExtensibleLockProvider provider,
      java.util.function.Function<String, String> pidOf)
      throws InterruptedException {
    String name = "bench-" + spec.key();
    Duration ttl = spec.ttl();
    AtomicReference<SimpleLock> held = new AtomicReference<>();
    AtomicBoolean ready = new AtomicBoolean();
    AtomicBoolean stopping = new AtomicBoolean();
    java.util.concurrent.atomic.AtomicLong validUntilNanos =
        new java.util.concurrent.atomic.AtomicLong();
    Object guard = new Object();
    ScheduledExecutorService ticker =
        Executors.newSingleThreadScheduledExecutor(r -> named(r, "retsu-lock-bench-shedlock-tick"));
    ticker.scheduleWithFixedDelay(
        () -> {
          long start = System.nanoTime();
          try {
            SimpleLock current = held.get();
            if (current == null) {
              Optional<SimpleLock> lock =
                  provider.lock(new LockConfiguration(CLOCK.instant(), name, ttl, Duration.ZERO));
              if (lock.isPresent() && !stopping.get()) {
                synchronized (guard) {
                  held.set(lock.get());
                  validUntilNanos.set(start + ttl.toNanos());
                }
                emit("ACQUIRED", pidOf.apply(name));
                emit("REFRESH", "");
              }
            } else {
              Optional<SimpleLock> extended = current.extend(ttl, Duration.ZERO);
              synchronized (guard) {
                if (held.get() != current) {
                  return; // expired meanwhile
                }
                if (extended.isPresent()) {
                  held.set(extended.get());
                  validUntilNanos.set(start + ttl.toNanos());
                  emit("REFRESH", "");
                } else {
                  held.set(null);
                  emit("LOST", "EXTEND_FAILED");
                }
              }
            }
          } catch (RuntimeException e) {
            System.err.println("tick failed: " + e);
          } finally {
            if (ready.compareAndSet(false, true)) {
              emit("READY", "");
            }
          }
        },
        0,
        spec.retry().toMillis(),
        TimeUnit.MILLISECONDS);
    ScheduledExecutorService watchdog =
        Executors.newSingleThreadScheduledExecutor(
            r -> named(r, "retsu-lock-bench-shedlock-watchdog"));
    watchdog.scheduleWithFixedDelay(
        () -> {
          synchronized (guard) {
            if (held.get() != null && System.nanoTime() - validUntilNanos.get() >= 0) {
              held.set(null);
              emit("LOST", "EXPIRED");
            }
          }
        },
        10,
        10,
        TimeUnit.MILLISECONDS);
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stopping.set(true);
                  ticker.shutdownNow();
                  watchdog.shutdownNow();
                  SimpleLock lock;
                  synchronized (guard) {
                    lock = held.getAndSet(null);
                    if (lock != null) {
                      emit("LOST", "CLOSED");
                    }
                  }
                  if (lock != null) {
                    try {
                      lock.unlock();
                    } catch (RuntimeException e) {
                      System.err.println("unlock failed: " + e);
                    }
                  }
                  emit("EXIT", "STOPPED");
                  done.countDown();
                },
                "retsu-lock-bench-shedlock-shutdown"));
    done.await();
  }

  // ---------------------------------------------------------------- Spring Integration

  /**
   * Spring Integration's {@link LockRegistryLeaderInitiator} over a {@link JdbcLockRegistry}. A
   * granted leader refreshes right away and then every refresh interval while it holds the role.
   */
  private static void runSpring(CandidateSpec spec) throws InterruptedException {
    HikariDataSource ds = pool(spec);
    DefaultLockRepository repository = new DefaultLockRepository(ds);
    repository.setTransactionManager(new DataSourceTransactionManager(ds));
    repository.afterPropertiesSet();
    repository.afterSingletonsInstantiated();
    repository.start();
    JdbcLockRegistry registry =
        spec.ttl() == null
            ? new JdbcLockRegistry(repository)
            : new JdbcLockRegistry(repository, spec.ttl());
    AtomicBoolean granted = new AtomicBoolean();
    DefaultCandidate candidate =
        new DefaultCandidate(spec.id(), "bench-" + spec.key()) {
          @Override
          public void onGranted(Context ctx) {
            granted.set(true);
            emit("ACQUIRED", "-");
            emit("REFRESH", "");
          }

          @Override
          public void onRevoked(Context ctx) {
            if (granted.getAndSet(false)) {
              emit("LOST", "REVOKED");
            }
          }
        };
    LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(registry, candidate);
    if (spec.heartbeat() != null) {
      initiator.setHeartBeatMillis(spec.heartbeat().toMillis());
    }
    initiator.start();
    emit("READY", "");
    ScheduledExecutorService ticker = refreshWhile(spec, granted::get, "spring");
    awaitShutdown(
        "spring",
        () -> {
          ticker.shutdownNow();
          boolean leading = granted.get();
          initiator.stop();
          // stop() only interrupts the selector thread, which then deletes the lock row
          // and calls onRevoked; keep the pool open until it has done so
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
          while (leading && granted.get() && System.nanoTime() - deadline < 0) {
            try {
              Thread.sleep(5);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              break;
            }
          }
          if (granted.getAndSet(false)) {
            emit("LOST", "CLOSED");
          }
          emit("EXIT", "STOPPED");
          ds.close();
        });
  }

  /** Prints REFRESH every refresh interval while {@code leading} says so. */
  private static ScheduledExecutorService refreshWhile(
      CandidateSpec spec, java.util.function.BooleanSupplier leading, String name) {
    ScheduledExecutorService ticker =
        Executors.newSingleThreadScheduledExecutor(
            r -> named(r, "retsu-lock-bench-" + name + "-refresh"));
    ticker.scheduleWithFixedDelay(
        () -> {
          if (leading.getAsBoolean()) {
            emit("REFRESH", "");
          }
        },
        spec.refresh().toMillis(),
        spec.refresh().toMillis(),
        TimeUnit.MILLISECONDS);
    return ticker;
  }

  /** Runs {@code stop} on SIGTERM and blocks the main thread until it has run. */
  private static void awaitShutdown(String name, Runnable stop) throws InterruptedException {
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stop.run();
                  done.countDown();
                },
                "retsu-lock-bench-" + name + "-shutdown"));
    done.await();
  }

  /**
   * retsu-lock-spring-integration's {@link RetsuLeaderInitiator} in place of Spring's initiator,
   * everything else as {@link #runSpring}: granted leaders refresh every refresh interval while
   * they hold the role. Safety knobs at core's defaults; retry interval from the spec.
   */
  private static void runRetsuSpring(CandidateSpec spec) throws InterruptedException {
    HikariDataSource ds = pool(spec);
    AtomicBoolean granted = new AtomicBoolean();
    AtomicReference<RetsuLeaderInitiator> self = new AtomicReference<>();
    DefaultCandidate candidate =
        new DefaultCandidate(spec.id(), "bench-" + spec.key()) {
          @Override
          public void onGranted(Context ctx) {
            granted.set(true);
            emit(
                "ACQUIRED",
                self.get().currentTerm().map(t -> Integer.toString(t.backendPid())).orElse("-"));
            emit("REFRESH", "");
          }

          @Override
          public void onRevoked(Context ctx) {
            if (granted.getAndSet(false)) {
              emit("LOST", "REVOKED");
            }
          }
        };
    AtomicBoolean ready = new AtomicBoolean();
    RetsuLeaderInitiator initiator =
        RetsuLeaderInitiator.builder(ds, candidate)
            .retryInterval(spec.retry())
            .loop(
                b -> {
                  RetsuTakeover.apply(b, spec.mode());
                  b.listener(
                      new LeaderListener() {
                        @Override
                        public void onAttempt(
                            AttemptResult result, Duration duration, Throwable error) {
                          // As in runRetsu: no line inside a WAIT standby's takeover.
                          if (result != AttemptResult.ACQUIRED
                              && ready.compareAndSet(false, true)) {
                            emit("READY", "");
                          }
                        }

                        @Override
                        public void onAcquired(Term term) {
                          emitAt("TOKEN", micros(term.start()), "");
                        }
                      });
                })
            .build();
    self.set(initiator);
    initiator.start();
    ScheduledExecutorService ticker =
        refreshWhile(
            spec, () -> granted.get() && initiator.getContext().isLeader(), "retsu-spring");
    awaitShutdown(
        "retsu-spring",
        () -> {
          ticker.shutdownNow();
          initiator.destroy(); // revokes (LOST REVOKED) before the lock is released
          emit("EXIT", "STOPPED");
          ds.close();
        });
  }

  private static Thread named(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }
}
