package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariProxyConnection;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.session.KeySql;
import dev.retsu.lock.internal.session.SessionGuard;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.lang.reflect.Proxy;
import java.sql.Array;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.sql.Wrapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.PGConnection;
import org.postgresql.PGStatement;
import org.postgresql.jdbc.PgConnection;

/**
 * The lease's connection view must not leak the locked session through the rest of the JDBC object
 * graph: whatever a caller reaches from {@link AdvisoryLockLease#connection()} and closes, the
 * session stays with the lease (lock held, not back in a pool, not ended) until the lease closes.
 */
@ExtendWith(PostgresExtension.class)
class LeaseConnectionEscapeIntegrationTest {

  private static final Duration PROMPTLY = Duration.ofSeconds(5);

  /**
   * How long the next borrower may wait for a session: the pool's refill, or a new connection, on a
   * loaded machine. What it gets is asserted, not how soon (a clean-clone CI run once saw one
   * borrow outlast 5 s).
   */
  private static final Duration NEXT_BORROW = Duration.ofSeconds(30);

  /** Where the lease borrows its session from. */
  enum Source {
    /** A HikariCP pool of one connection: an escaped handle would go back to the pool. */
    HIKARI,
    /** A plain pgjdbc data source: an escaped handle would end the session, and the lock. */
    PLAIN
  }

  /** An object reached from the lease's view. */
  @FunctionalInterface
  private interface Reach {
    Wrapper from(Connection view) throws SQLException;
  }

  /** A way from such an object to something that may be the session's connection. */
  @FunctionalInterface
  private interface Escape {
    Connection from(Wrapper object, Source source) throws SQLException;
  }

  private static final Map<String, Reach> OBJECTS = new LinkedHashMap<>();
  private static final Map<String, Escape> ESCAPES = new LinkedHashMap<>();

  static {
    OBJECTS.put("connection()", view -> view);
    OBJECTS.put("createStatement()", Connection::createStatement);
    OBJECTS.put("prepareStatement(..)", view -> view.prepareStatement("SELECT 1"));
    OBJECTS.put("prepareCall(..)", view -> view.prepareCall("{? = call pg_backend_pid()}"));
    OBJECTS.put(
        "createStatement().executeQuery(..)",
        view -> view.createStatement().executeQuery("SELECT 1"));
    OBJECTS.put(
        "prepareStatement(..).executeQuery()",
        view -> view.prepareStatement("SELECT 1").executeQuery());
    OBJECTS.put("getMetaData()", Connection::getMetaData);
    OBJECTS.put(
        "getMetaData().getTables(..)",
        view -> view.getMetaData().getTables(null, "pg_catalog", "pg_class", null));
    OBJECTS.put(
        "createArrayOf(..).getResultSet()",
        view -> view.createArrayOf("int4", new Integer[] {1, 2}).getResultSet());
    OBJECTS.put(
        "executeQuery(..).getArray(1).getResultSet()",
        view -> {
          ResultSet rs = view.createStatement().executeQuery("SELECT ARRAY[1, 2]");
          rs.next();
          return rs.getArray(1).getResultSet();
        });

    ESCAPES.put("getConnection()", (object, source) -> connectionOf(object));
    ESCAPES.put(
        "unwrap(its JDBC interface).getConnection()",
        (object, source) -> connectionOf(object.unwrap(jdbcInterface(object))));
    ESCAPES.put("unwrap(Connection)", (object, source) -> object.unwrap(Connection.class));
    ESCAPES.put(
        "unwrap(PGConnection)", (object, source) -> (Connection) object.unwrap(PGConnection.class));
    ESCAPES.put(
        "unwrap(the pool's connection class)",
        (object, source) ->
            source == Source.HIKARI
                ? object.unwrap(HikariProxyConnection.class)
                : object.unwrap(PgConnection.class));
  }

  /** The connection an object belongs to, the way JDBC code would ask for it. */
  private static Connection connectionOf(Object object) throws SQLException {
    if (object instanceof Connection) {
      return (Connection) object;
    }
    if (object instanceof Statement) {
      return ((Statement) object).getConnection();
    }
    if (object instanceof ResultSet) {
      return ((ResultSet) object).getStatement().getConnection();
    }
    if (object instanceof DatabaseMetaData) {
      return ((DatabaseMetaData) object).getConnection();
    }
    throw new IllegalArgumentException("no connection for " + object);
  }

  private static Class<?> jdbcInterface(Object object) {
    for (Class<?> type :
        List.of(
            Connection.class,
            CallableStatement.class,
            PreparedStatement.class,
            Statement.class,
            ResultSet.class,
            DatabaseMetaData.class)) {
      if (type.isInstance(object)) {
        return type;
      }
    }
    throw new IllegalArgumentException("no JDBC interface for " + object);
  }

  static Stream<Arguments> escapes() {
    List<Arguments> all = new ArrayList<>();
    for (Source source : Source.values()) {
      for (String object : OBJECTS.keySet()) {
        for (String escape : ESCAPES.keySet()) {
          boolean duplicate =
              object.equals("connection()") && escape.startsWith("unwrap(its JDBC interface)");
          if (!duplicate) {
            all.add(Arguments.of(source, object, escape));
          }
        }
      }
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0}: {1} then {2}, closed")
  @MethodSource("escapes")
  void nothingReachedFromTheViewReturnsOrEndsTheLockedSession(
      Source source, String object, String escape, TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    // The observer's session is opened first: checks on it time the lease's backend, not a new
    // connection's start-up (which a clean-clone CI run once saw take more than 5 s).
    try (Pool pool = Pool.open(source, db);
        Connection observer = db.connect()) {
      AdvisoryLockLease lease = AdvisoryLock.of(pool.dataSource(), key).tryAcquire().orElseThrow();
      int pid = lease.backendPid();
      Connection view = lease.connection();
      SoftAssertions softly = new SoftAssertions();

      Connection escaped = null;
      try {
        escaped = ESCAPES.get(escape).from(OBJECTS.get(object).from(view), source);
      } catch (SQLException e) {
        softly
            .assertThat(e.getSQLState())
            .as("SQLState of the refused %s (%s)", escape, e)
            .isEqualTo("0A000");
        softly
            .assertThat(e.getMessage())
            .as("message of the refused %s", escape)
            .contains("would hand out the lease's locked session");
      }
      if (escaped != null) {
        softly
            .assertThat(escaped)
            .as("the handle reached by %s.%s is the lease's guarded view", object, escape)
            .isSameAs(view);
        escaped.close(); // on anything but the view: returns the session to the pool, or ends it
      }

      softly
          .assertThat(holdsKey(db, pid, key))
          .as("backend %d still holds the lease's key (seen from another session)", pid)
          .isTrue();
      softly
          .assertThat(pidThrough(view))
          .as("the view still runs on the lease's backend")
          .isEqualTo(String.valueOf(pid));
      if (source == Source.HIKARI) {
        softly
            .assertThat(borrowWhileLeased(pool.dataSource(), db))
            .as("borrowing from the one-connection pool while the lease is open")
            .isEqualTo("pool exhausted");
      }

      lease.close();

      softly
          .assertThatCode(
              () ->
                  await()
                      .atMost(PROMPTLY)
                      .untilAsserted(() -> assertThat(backendExists(observer, pid)).isFalse()))
          .as("backend %d ends when the lease closes", pid)
          .doesNotThrowAnyException();
      int[] next = nextBorrower(pool.dataSource());
      softly.assertThat(next[0]).as("the next borrower's backend").isNotEqualTo(pid);
      softly.assertThat(next[1]).as("advisory locks held by the next borrower").isZero();
      softly.assertThat(db.advisoryLockHolders()).as("advisory lock holders").doesNotContain(pid);
      softly.assertAll();
    }
  }

  @ParameterizedTest
  @EnumSource(Source.class)
  void objectsReachedThroughTheViewDieWithTheLease(Source source, TestDatabase db)
      throws Exception {
    LockKey key = TestKeys.next();
    try (Pool pool = Pool.open(source, db)) {
      AdvisoryLockLease lease = AdvisoryLock.of(pool.dataSource(), key).tryAcquire().orElseThrow();
      Connection view = lease.connection();
      Statement statement = view.createStatement();
      PreparedStatement prepared = view.prepareStatement("SELECT pg_backend_pid()");
      ResultSet rows = statement.executeQuery("SELECT generate_series(1, 3)");
      DatabaseMetaData metaData = view.getMetaData();
      try (ResultSet rs = prepared.executeQuery()) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(lease.backendPid());
      }
      assertThat(rows.next()).isTrue();

      lease.close();

      assertClosedLease(() -> statement.executeQuery("SELECT 1"));
      assertClosedLease(prepared::executeQuery);
      assertClosedLease(rows::next);
      assertClosedLease(() -> metaData.getTables(null, "pg_catalog", "pg_class", null));
      assertThat(statement.isClosed()).isTrue();
      assertThat(view.isClosed()).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(Source.class)
  void closingTheLeaseDuringACallThroughTheViewAbortsTheCall(Source source, TestDatabase db)
      throws Exception {
    // Calls through the view now hold the lease's I/O lock; close() must still not wait for them
    // (it sees the session busy and aborts it).
    LockKey key = TestKeys.next();
    ExecutorService worker = Executors.newSingleThreadExecutor();
    try (Pool pool = Pool.open(source, db)) {
      AdvisoryLockLease lease = AdvisoryLock.of(pool.dataSource(), key).tryAcquire().orElseThrow();
      int pid = lease.backendPid();
      PreparedStatement sleep = lease.connection().prepareStatement("SELECT pg_sleep(3)");
      Future<?> call = worker.submit(() -> sleep.executeQuery());
      await()
          .atMost(PROMPTLY)
          .until(
              () ->
                  db.queryInts(
                      "SELECT pid FROM pg_stat_activity WHERE pid = ? AND state = 'active'"
                          + " AND query LIKE 'SELECT pg_sleep%'",
                      pid),
              pids -> !pids.isEmpty());

      assertTimeoutPreemptively(Duration.ofSeconds(2), lease::close);

      assertThatThrownBy(() -> call.get(2, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasCauseInstanceOf(SQLException.class);
      // The server notices the vanished client only once pg_sleep returns (no
      // client_connection_check_interval here); until then the backend keeps the lock.
      await()
          .atMost(Duration.ofSeconds(15))
          .untilAsserted(() -> assertThat(db.backendExists(pid)).isFalse());
      assertThat(holdsKey(db, pid, key)).isFalse();
    } finally {
      worker.shutdownNow();
    }
  }

  @Test
  void hooksSeeEveryCallItsSqlAndItsRoundTrips(TestDatabase db) throws SQLException {
    try (Connection session = db.connect()) {
      Recorder hooks = new Recorder();
      Connection view = SessionGuard.guard(session, hooks, "[test]");

      PreparedStatement ps = view.prepareStatement("SELECT ?::int + 1");
      assertThat(hooks.take())
          .containsExactly("enter", "sql SELECT ?::int + 1", "exit roundTrip=false failure=null");
      ps.setInt(1, 41);
      assertThat(hooks.take()).containsExactly("enter", "exit roundTrip=false failure=null");
      ResultSet rs = ps.executeQuery();
      // An execution of a prepared statement reports the text it runs again.
      assertThat(hooks.take())
          .containsExactly("enter", "sql SELECT ?::int + 1", "exit roundTrip=true failure=null");
      assertThat(rs.next()).isTrue();
      assertThat(rs.getInt(1)).isEqualTo(42);
      assertThat(hooks.take())
          .containsExactly(
              "enter",
              "exit roundTrip=false failure=null",
              "enter",
              "exit roundTrip=false failure=null");

      Statement s = view.createStatement();
      hooks.take();
      s.addBatch("SELECT 1");
      assertThat(hooks.take())
          .containsExactly("enter", "sql SELECT 1", "exit roundTrip=false failure=null");
      s.executeBatch();
      assertThat(hooks.take()).containsExactly("enter", "exit roundTrip=true failure=null");
      s.executeUpdate("SET application_name = 'guarded'");
      assertThat(hooks.take())
          .containsExactly(
              "enter", "sql SET application_name = 'guarded'", "exit roundTrip=true failure=null");
      assertThat(view.nativeSQL("SELECT {fn now()}")).isNotBlank();
      assertThat(hooks.take()).element(1).isEqualTo("sql SELECT {fn now()}");

      // The call's own exception comes out unchanged and is reported; not a round trip.
      SQLException syntax =
          catchThrowableOfType(SQLException.class, () -> s.executeQuery("SELEC 1"));
      assertThat(syntax.getSQLState()).isEqualTo("42601");
      assertThat(hooks.take())
          .containsExactly("enter", "sql SELEC 1", "exit roundTrip=false failure=42601");
      assertThat(hooks.failures).containsExactly(syntax);

      // Object methods and the wrapper API never reach the hooks.
      assertThat(view.toString()).contains("lease connection").contains("[test]");
      assertThat(s.toString()).contains("Statement").contains("[test]");
      assertThat(view.equals(view)).isTrue();
      assertThat(s.hashCode()).isEqualTo(System.identityHashCode(s));
      assertThat(s.isWrapperFor(Statement.class)).isTrue();
      assertThat(s.isWrapperFor(PGStatement.class)).isFalse();
      assertThat(hooks.take()).isEmpty();
      assertThat(hooks.io.isHeldByCurrentThread()).isFalse();
    }
  }

  @Test
  void hooksSeeTheTerminationOfTheSessionWithItsSqlState(TestDatabase db) throws SQLException {
    try (Connection session = db.connect()) {
      Recorder hooks = new Recorder();
      Connection view = SessionGuard.guard(session, hooks, "[test]");
      int pid;
      try (Statement s = view.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        pid = rs.getInt(1);
      }
      Statement s = view.createStatement();
      hooks.take();
      assertThat(db.terminateBackend(pid)).isTrue();

      SQLException terminated =
          catchThrowableOfType(SQLException.class, () -> s.executeQuery("SELECT 1"));

      assertThat(terminated.getSQLState()).isEqualTo("57P01");
      assertThat(hooks.take())
          .containsExactly("enter", "sql SELECT 1", "exit roundTrip=false failure=57P01");
      assertThat(hooks.failures).containsExactly(terminated);
      assertThat(hooks.io.isLocked()).isFalse();
    }
  }

  @Test
  void aClosedLeaseIsRefusedBeforeTheDriverIsCalled(TestDatabase db) throws SQLException {
    try (Connection session = db.connect()) {
      Recorder hooks = new Recorder();
      Connection view = SessionGuard.guard(session, hooks, "[test]");
      Statement s = view.createStatement();
      ResultSet rs = s.executeQuery("SELECT 1");
      hooks.take();
      hooks.closed = true;

      assertThatThrownBy(() -> s.executeUpdate("CREATE TABLE never_created (id int)"))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("08003"));
      assertThat(view.isClosed()).isTrue();
      assertThat(s.isClosed()).isTrue();
      rs.close(); // the session ended with the lease: nothing to do, and no error
      s.close();
      view.close();
      assertThat(hooks.take()).containsExactly("enter", "enter", "enter", "enter", "enter");
      assertThat(hooks.io.isLocked()).isFalse();
      assertThat(session.isClosed()).isFalse();
      assertThat(db.queryInts("SELECT count(*)::int FROM pg_class WHERE relname = 'never_created'"))
          .containsExactly(0);
    }
  }

  @Test
  void theGraphHandsOutOnlyItsOwnProxies(TestDatabase db) throws SQLException {
    try (Connection session = db.connect()) {
      Recorder hooks = new Recorder();
      Connection view = SessionGuard.guard(session, hooks, "[test]");

      Statement s = view.createStatement();
      ResultSet rs = s.executeQuery("SELECT ARRAY[1, 2]");
      assertThat(rs.getStatement()).isSameAs(s);
      assertThat(s.getConnection()).isSameAs(view);
      assertThat(s.unwrap(Statement.class)).isSameAs(s);
      assertThat(view.unwrap(Connection.class)).isSameAs(view);
      assertThat(rs.next()).isTrue();
      Array array = rs.getArray(1);
      assertThat(Proxy.isProxyClass(array.getClass())).isTrue();
      ResultSet elements = array.getResultSet();
      assertThat(elements.getStatement().getConnection()).isSameAs(view);
      assertThat(view.getMetaData().getConnection()).isSameAs(view);
      assertThat(rs.getMetaData().getColumnCount()).isEqualTo(1);

      PreparedStatement ps = view.prepareStatement("SELECT ?::int[]");
      assertThat(ps).isInstanceOf(PreparedStatement.class).isNotInstanceOf(CallableStatement.class);
      assertThat(view.prepareCall("{? = call pg_backend_pid()}"))
          .isInstanceOf(CallableStatement.class);

      // A proxy passed back in reaches the driver as the driver's own object.
      ps.setArray(1, view.createArrayOf("int4", new Integer[] {3, 4}));
      try (ResultSet back = ps.executeQuery()) {
        assertThat(back.getStatement()).isSameAs(ps);
        back.next();
        assertThat((Integer[]) back.getArray(1).getArray()).containsExactly(3, 4);
      }

      for (Wrapper w : List.<Wrapper>of(view, s, rs, ps, view.getMetaData(), rs.getMetaData())) {
        assertThatThrownBy(() -> w.unwrap(PGConnection.class))
            .isInstanceOfSatisfying(
                SQLException.class,
                e -> {
                  assertThat(e.getSQLState()).isEqualTo("0A000");
                  assertThat(e.getMessage())
                      .contains("org.postgresql.PGConnection")
                      .contains("would hand out the lease's locked session");
                });
        assertThat(w.isWrapperFor(PGConnection.class)).isFalse();
        assertThat(w.isWrapperFor(Wrapper.class)).isTrue();
      }
      assertThat(hooks.io.isLocked()).isFalse();
      assertThat(hooks.enters.get()).isEqualTo(hooks.exits.get());
    }
  }

  /** Hooks that take a lock like the lease does and record what they see. */
  private static final class Recorder implements SessionGuard.Hooks {
    final ReentrantLock io = new ReentrantLock();
    final List<String> events = new CopyOnWriteArrayList<>();
    final List<SQLException> failures = new CopyOnWriteArrayList<>();
    final AtomicInteger enters = new AtomicInteger();
    final AtomicInteger exits = new AtomicInteger();
    volatile boolean closed;

    @Override
    public void enter() throws SQLException {
      io.lock();
      events.add("enter");
      if (closed) {
        io.unlock();
        throw new SQLException("The lease is closed [test]", "08003");
      }
      enters.incrementAndGet();
    }

    @Override
    public void exit(long startNanos, boolean roundTrip, SQLException failure) {
      assertThat(io.isHeldByCurrentThread()).as("exit runs under the lock enter took").isTrue();
      assertThat(System.nanoTime() - startNanos).isNotNegative();
      events.add(
          "exit roundTrip="
              + roundTrip
              + " failure="
              + (failure == null ? "null" : failure.getSQLState()));
      if (failure != null) {
        failures.add(failure);
      }
      exits.incrementAndGet();
      io.unlock();
    }

    @Override
    public void sql(String sql) {
      assertThat(io.isHeldByCurrentThread()).as("sql is reported inside enter/exit").isTrue();
      events.add("sql " + sql);
    }

    /** The events since the last call, which are then forgotten. */
    List<String> take() {
      List<String> out = new ArrayList<>(events);
      events.clear();
      return out;
    }
  }

  private static void assertClosedLease(
      org.assertj.core.api.ThrowableAssert.ThrowingCallable call) {
    assertThatThrownBy(call)
        .isInstanceOfSatisfying(
            SQLException.class,
            e -> {
              assertThat(e.getSQLState()).isEqualTo("08003");
              assertThat(e.getMessage()).contains("lease is closed");
            });
  }

  /** Whether {@code pid} holds {@code key}, asked on a separate connection. */
  private static boolean holdsKey(TestDatabase db, int pid, LockKey key) throws SQLException {
    try (Connection c = db.connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
                    + " AND l.pid = ? AND "
                    + KeySql.pgLocksPredicate(key, "l"))) {
      ps.setInt(1, pid);
      KeySql.bindLocks(ps, 2, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) == 1;
      }
    }
  }

  /** The backend pid the view runs on, or what went wrong. */
  private static String pidThrough(Connection view) {
    try (Statement s = view.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return String.valueOf(rs.getInt(1));
    } catch (SQLException e) {
      return e.toString();
    }
  }

  /** What a second borrower gets from the pool while the lease is open. */
  private static String borrowWhileLeased(DataSource pool, TestDatabase db) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      int pid = rs.getInt(1);
      return "borrowed backend "
          + pid
          + ", which holds "
          + db.advisoryLocksHeldBy(pid)
          + " lock(s)";
    } catch (SQLTransientConnectionException e) {
      return "pool exhausted";
    }
  }

  /** Whether a backend is still there, read on an open session (autocommit: a fresh snapshot). */
  private static boolean backendExists(Connection observer, int pid) throws SQLException {
    try (java.sql.PreparedStatement ps =
        observer.prepareStatement(
            "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE pid = ?")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }

  /** The next borrower's backend pid and how many advisory locks it holds. */
  private static int[] nextBorrower(DataSource source) {
    return await()
        .atMost(NEXT_BORROW)
        .ignoreException(SQLTransientConnectionException.class)
        .until(
            () -> {
              try (Connection c = source.getConnection();
                  Statement s = c.createStatement();
                  ResultSet rs =
                      s.executeQuery(
                          "SELECT pg_backend_pid(), (SELECT count(*) FROM pg_locks WHERE locktype"
                              + " = 'advisory' AND pid = pg_backend_pid())")) {
                rs.next();
                return new int[] {rs.getInt(1), rs.getInt(2)};
              }
            },
            r -> true);
  }

  /** The data source a lease borrows from, and the pool to shut down afterwards. */
  private record Pool(DataSource dataSource, HikariDataSource hikari) implements AutoCloseable {
    static Pool open(Source source, TestDatabase db) {
      if (source == Source.PLAIN) {
        return new Pool(db.dataSource(), null);
      }
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(db.jdbcUrl());
      config.setUsername(db.user());
      config.setPassword(db.password());
      config.setMaximumPoolSize(1);
      config.setConnectionTimeout(250);
      config.setPoolName("retsu-lock-escape-test");
      HikariDataSource hikari = new HikariDataSource(config);
      return new Pool(hikari, hikari);
    }

    @Override
    public void close() {
      if (hikari != null) {
        hikari.close();
      }
    }
  }
}
