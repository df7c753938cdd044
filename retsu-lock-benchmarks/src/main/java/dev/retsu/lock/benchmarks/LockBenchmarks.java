package dev.retsu.lock.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.AdvisoryLock;
import dev.retsu.lock.AdvisoryLockLease;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.SessionIo;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Latency of the lock's round trips on loopback, one thread: a standby attempt on a pooled
 * connection while another session holds the key, the leader's ownership check, and ending a lease.
 * The server comes from the system properties {@code retsu.bench.jdbcUrl} and {@code
 * retsu.bench.user}, which {@link BenchmarkMain} sets for the forked JVM.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class LockBenchmarks {

  /** A held key, a pool for attempts on it, and a lease for ownership checks. */
  @State(Scope.Thread)
  public static class Held {
    HikariDataSource pool;
    AdvisoryLock contender;
    AdvisoryLockLease lease;

    /** Takes the key with one session and opens a pool for a second candidate. */
    @Setup(Level.Trial)
    public void setUp() {
      PGSimpleDataSource direct = direct();
      LockKey key = LockKey.of(424_242L);
      lease = AdvisoryLock.of(direct, key).tryAcquire().orElseThrow();
      HikariConfig hc = new HikariConfig();
      hc.setJdbcUrl(System.getProperty("retsu.bench.jdbcUrl"));
      hc.setUsername(System.getProperty("retsu.bench.user"));
      hc.setMaximumPoolSize(1);
      pool = new HikariDataSource(hc);
      contender = AdvisoryLock.of(pool, key);
    }

    /** Ends the lease and the pool. */
    @TearDown(Level.Trial)
    public void tearDown() {
      lease.close();
      pool.close();
    }
  }

  /**
   * A fresh lease before each call, for timing close() alone. Each call uses a new key: close()
   * returns once the session is ended on the client side, and the server may release the lock a
   * moment later, so the same key could still be held by the previous call's backend.
   */
  @State(Scope.Thread)
  public static class Fresh {
    PGSimpleDataSource dataSource;
    long next = 434_343L;
    AdvisoryLockLease lease;

    /** Prepares the data source. */
    @Setup(Level.Trial)
    public void setUp() {
      dataSource = direct();
    }

    /** Takes a new key on a new session before each call. */
    @Setup(Level.Invocation)
    public void acquire() {
      lease = AdvisoryLock.of(dataSource, LockKey.of(next++)).tryAcquire().orElseThrow();
    }

    /** Closes a lease the benchmark left open. */
    @TearDown(Level.Invocation)
    public void release() {
      lease.close();
    }
  }

  /** A quiet session, for the socket probe behind {@code ensureLeader()}. */
  @State(Scope.Thread)
  public static class Quiet {
    Connection connection;

    /** Opens the session. */
    @Setup(Level.Trial)
    public void setUp() throws SQLException {
      connection = direct().getConnection();
    }

    /** Closes it. */
    @TearDown(Level.Trial)
    public void tearDown() throws SQLException {
      connection.close();
    }
  }

  static PGSimpleDataSource direct() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(System.getProperty("retsu.bench.jdbcUrl"));
    ds.setUser(System.getProperty("retsu.bench.user"));
    return ds;
  }

  /**
   * A standby attempt: borrow a pooled connection, {@code pg_try_advisory_lock} returns false, give
   * the connection back.
   *
   * @param s the state
   * @return the (empty) result
   */
  @Benchmark
  public Optional<AdvisoryLockLease> tryAcquireHeldElsewhere(Held s) {
    return s.contender.tryAcquire();
  }

  /**
   * The leader's heartbeat: one round trip proving the session is alive and holds the key.
   *
   * @param s the state
   * @return true
   */
  @Benchmark
  public boolean isHeldHeartbeat(Held s) {
    return s.lease.isHeld();
  }

  /**
   * What {@code ensureLeader()} costs on a live, quiet session: a read of what is already on the
   * socket, no round trip. The read waits at most 1 ms (the smallest socket timeout), which is what
   * a quiet session costs. It calls core's internal {@code PgSession} directly: core's module does
   * not export {@code dev.retsu.lock.internal}, so this works only because the benchmarks run on
   * the class path (the shaded jar carries no module descriptor).
   *
   * @param s the state
   * @return what the socket showed
   */
  @Benchmark
  public SessionIo.Evidence ensureLeaderSocketProbe(Quiet s) {
    return PgSession.probe(s.connection);
  }

  /**
   * The strict check's floor: one trivial round trip on the same session.
   *
   * @param s the state
   * @return 1
   * @throws SQLException on a database error
   */
  @Benchmark
  public int roundTripSelect1(Quiet s) throws SQLException {
    try (Statement st = s.connection.createStatement();
        ResultSet rs = st.executeQuery("SELECT 1")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /**
   * Ending a lease: the session ends, so the server releases the lock.
   *
   * @param s the state
   */
  @Benchmark
  public void leaseClose(Fresh s) {
    s.lease.close();
  }
}
