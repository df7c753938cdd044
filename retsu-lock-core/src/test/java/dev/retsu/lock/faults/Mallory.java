package dev.retsu.lock.faults;

import static org.awaitility.Awaitility.await;

import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.testing.LoginOnlyRole;
import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.WhoLeadsChecker.ForeignHold;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A hostile role for the fault suite: LOGIN and nothing else (the database's default {@code
 * CONNECT} for PUBLIC), created per test with a unique name. It does what any role that can connect
 * can do (DESIGN invariant 9): notify the library's channel {@value Notices#CHANNEL} (and a
 * group's), name its sessions like a candidate's term or a preferred standby, and queue on the key
 * with {@code pg_advisory_lock}. It records every backend pid it used and when it actually held a
 * key, for {@link dev.retsu.lock.testing.WhoLeadsChecker}.
 */
final class Mallory implements AutoCloseable {

  /**
   * A token far above every real one that still fits a session's name: a forged term that would
   * outrank every real one.
   */
  static final String TOP =
      new dev.retsu.lock.FencingToken(9_999, 9_999_999_999_999_999L, 9_999_999_999_999_999L)
          .toString();

  final String role;
  private final LoginOnlyRole login;
  private final PGSimpleDataSource ds;
  final Set<Integer> pids = ConcurrentHashMap.newKeySet();
  final List<ForeignHold> holds = new CopyOnWriteArrayList<>();
  private final List<Connection> open = new CopyOnWriteArrayList<>();
  private final List<CompletableFuture<Void>> queued = new CopyOnWriteArrayList<>();

  Mallory(TestDatabase db) throws SQLException {
    this.login = LoginOnlyRole.create(db, "mallory");
    this.role = login.name();
    ds = login.dataSource();
    ds.setConnectTimeout(5);
  }

  /** A session of mallory's named {@code applicationName}; its pid is recorded. */
  Connection session(String applicationName) throws SQLException {
    Connection c = ds.getConnection();
    open.add(c);
    run(c, "SELECT pg_catalog.set_config('application_name', ?, false)", applicationName);
    pids.add(pid(c));
    return c;
  }

  static int pid(Connection c) throws SQLException {
    try (var st = c.createStatement();
        var rs = st.executeQuery("SELECT pg_catalog.pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static void run(Connection c, String sql, String... args) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setString(i + 1, args[i]);
      }
      ps.execute();
    }
  }

  /** Sends {@code payload} on {@code channel} from session {@code c}. */
  static void notify(Connection c, String channel, String payload) throws SQLException {
    run(c, "SELECT pg_catalog.pg_notify(?, ?)", channel, payload);
  }

  /** A forged {@code acquired} on the library's channel. */
  static void acquired(Connection c, long key, int pid, String token, String candidate)
      throws SQLException {
    notify(c, Notices.CHANNEL, "acquired 1:" + key + " " + pid + " " + token + " " + candidate);
  }

  /** A forged {@code released} on the library's channel. */
  static void released(Connection c, long key, int pid, String token) throws SQLException {
    notify(c, Notices.CHANNEL, "released 1:" + key + " " + pid + " " + token);
  }

  /**
   * A session named {@code applicationName} that queues on {@code key} with {@code
   * pg_advisory_lock} for at most {@code patience}; when the server grants it, it holds the key for
   * {@code hold} (recorded in {@link #holds}) and then ends its session, which lets go.
   */
  CompletableFuture<Void> queue(String applicationName, long key, Duration patience, Duration hold)
      throws SQLException {
    Connection c = session(applicationName);
    int pid = pid(c);
    run(c, "SELECT pg_catalog.set_config('lock_timeout', ?, false)", patience.toMillis() + "ms");
    CompletableFuture<Void> done =
        CompletableFuture.runAsync(
            () -> {
              try (PreparedStatement ps =
                  c.prepareStatement("SELECT pg_catalog.pg_advisory_lock(?::int8)")) {
                ps.setLong(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                  rs.next();
                }
                long from = System.nanoTime();
                // the hold is the fault itself: a foreign holder keeps every candidate out
                await().pollDelay(hold).atMost(hold.plusSeconds(5)).until(() -> true);
                c.close();
                holds.add(new ForeignHold(pid, from, System.nanoTime()));
              } catch (SQLException e) {
                // lock_timeout; but PostgreSQL can grant the lock in the instant it fires (the
                // statement fails and the session keeps the lock), so until the session is gone
                // it may hold the key
                long from = System.nanoTime();
                closeQuietly(c);
                holds.add(new ForeignHold(pid, from, System.nanoTime()));
              }
            });
    queued.add(done);
    return done;
  }

  /** Waits for every queued session to have given up or let go, and closes every session. */
  void settle(Duration within) throws Exception {
    for (CompletableFuture<Void> q : queued) {
      q.get(within.toMillis(), TimeUnit.MILLISECONDS);
    }
    queued.clear();
    for (Connection c : open) {
      closeQuietly(c);
    }
    open.clear();
    await()
        .atMost(within)
        .until(
            () ->
                login
                        .database()
                        .queryInts(
                            "SELECT count(*)::int FROM pg_catalog.pg_stat_activity"
                                + " WHERE usename = ?",
                            role)
                        .get(0)
                    == 0);
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException e) {
      // already gone
    }
  }

  @Override
  public void close() throws SQLException {
    try {
      settle(Duration.ofSeconds(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      throw new IllegalStateException("mallory's sessions did not end", e);
    }
    login.close();
  }
}
