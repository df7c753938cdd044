package dev.retsu.lock.internal.watch;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderChangeListener;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.HolderSql;
import dev.retsu.lock.internal.session.LockSession;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.Wakeup;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine of a {@code LeaderWatch} ({@code retsu-lock-watch-<name>}, daemon): one session of its
 * own that LISTENs on {@value Notices#CHANNEL} and serves every watched key. Per key ({@link
 * WatchedKeys}) it keeps the leader it last delivered and the highest token it ever delivered, so
 * that changes go out in token order and never twice:
 *
 * <ul>
 *   <li>a notice is a hint, never a fact (any role can send one): an {@code acquired} notice newer
 *       than every token delivered for the key makes the watch read the key from {@code pg_locks},
 *       and the read (only sessions of the candidates' role count as a candidate's term) is what
 *       goes out;
 *   <li>a {@code released} notice that the server shows came from the current leader's own session,
 *       for its token, is nobody;
 *   <li>every {@code checkInterval}, one read of {@code pg_stat_activity} for the current leaders'
 *       pids (never {@code pg_locks}, never a lock on a key) finds the sessions that ended without
 *       a notice: a crash or a terminate is nobody within one interval;
 *   <li>a key watched for the first time, and every key after the session was opened again, is read
 *       once from {@code pg_locks}.
 * </ul>
 *
 * The session is idle between statements (no transaction, no snapshot); notifications reach it only
 * then, in commit order. Thread-safe: {@link #watch} and {@link #close} from any thread.
 */
public final class Watcher implements Runnable {

  private static final Logger LOG = LoggerFactory.getLogger(Watcher.class);

  /** The longest one wait for notifications holds the session: new watches start within it. */
  private static final int SLICE_MILLIS = 50;

  private final SessionOpener.Spec spec;
  private final Duration checkInterval;
  private final Duration reconnectInterval;
  private final TimeSource time;
  private final Wakeup wakeup;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final ConcurrentLinkedQueue<Runnable> requests = new ConcurrentLinkedQueue<>();
  private final WatchedKeys keys;
  private final String candidateRole;
  private volatile LockSession session;
  private volatile Thread thread;
  private volatile boolean connected;

  /**
   * A watcher, not started.
   *
   * @param spec how its session is opened
   * @param checkInterval between two looks for leaders that ended without a notice
   * @param reconnectInterval the wait before a lost session is opened again
   * @param candidateRole the candidates' role, or null for the watch session's own
   */
  public Watcher(
      SessionOpener.Spec spec,
      Duration checkInterval,
      Duration reconnectInterval,
      String candidateRole) {
    this.spec = spec;
    this.candidateRole = candidateRole;
    this.checkInterval = checkInterval;
    this.reconnectInterval = reconnectInterval;
    this.time = spec.time();
    this.wakeup = new Wakeup(time, closed::get);
    this.keys = new WatchedKeys(spec.context(), time);
  }

  /**
   * Opens the session once, on the calling thread (a wrong URL fails here), and starts the thread.
   *
   * @param name the thread's name
   * @param failFast whether a session that cannot be opened now fails the start; otherwise the
   *     thread opens it every {@code reconnectInterval}, as after a lost session
   * @throws AdvisoryLockException when the session cannot be opened and {@code failFast}
   */
  public void start(String name, boolean failFast) {
    LockSession s = null;
    try {
      s = SessionOpener.open(spec);
      s.call(this::listen);
    } catch (SQLException e) {
      s.end();
      s = null;
      AdvisoryLockException failed = SessionOpener.failed(spec, "Listening failed", e);
      if (failFast) {
        throw failed;
      }
      notOpened(failed);
    } catch (AdvisoryLockException e) {
      if (failFast) {
        throw e;
      }
      notOpened(e);
    }
    session = s;
    Thread t = new Thread(this, name);
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  private void notOpened(AdvisoryLockException e) {
    LOG.warn(
        "{} The watch session cannot be opened yet; opening it every {} until it is: {}",
        spec.context(),
        reconnectInterval,
        e.getMessage());
  }

  private Void listen(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("LISTEN " + Notices.CHANNEL);
    }
    connected = true;
    return null;
  }

  /** Whether the watch's session is open and listening. */
  public boolean connected() {
    return connected && !closed.get();
  }

  /** What the watch last delivered for a key (empty: nobody, or not known yet). */
  public Optional<LeaderInfo> leader(LockKey key) {
    return keys.leader(key);
  }

  /**
   * Watches a key; the listener first hears the key's current leader (or nobody), then each change.
   *
   * @return what stops it
   */
  public Runnable watch(LockKey key, LeaderChangeListener listener) {
    AtomicBoolean active = new AtomicBoolean(true);
    LeaderChangeListener l =
        change -> {
          if (active.get()) {
            listener.onLeaderChanged(change);
          }
        };
    requests.add(() -> keys.add(key, l));
    return () -> {
      if (active.compareAndSet(true, false)) {
        requests.add(() -> keys.remove(key, l));
      }
    };
  }

  @Override
  public void run() {
    while (!closed.get()) {
      LockSession s = session;
      if (s == null) {
        try {
          s = SessionOpener.open(spec);
          s.call(this::listen);
          session = s;
          keys.readAllAgain(); // changes may have been missed while away
          LOG.info("{} Watch session opened on backend pid {}", spec.context(), s.id().pid());
        } catch (AdvisoryLockException | SQLException e) {
          if (s != null) {
            s.end();
          }
          LOG.debug("{} Opening the watch session failed: {}", spec.context(), e.toString());
          wakeup.await(reconnectInterval.toNanos(), () -> false);
          continue;
        }
      }
      try {
        serve(s);
      } catch (SQLException e) {
        if (!closed.get()) {
          LOG.warn(
              "{} The watch session was lost (SQLState {}); opening it again in {}",
              spec.context(),
              e.getSQLState(),
              reconnectInterval);
        }
      } catch (RuntimeException e) {
        LOG.error("{} The watch failed; opening its session again", spec.context(), e);
      }
      connected = false;
      s.end();
      session = null;
      if (!closed.get()) {
        wakeup.await(reconnectInterval.toNanos(), () -> false);
      }
    }
  }

  private void serve(Session s) throws SQLException {
    long nextCheck = time.nanoTime() + checkInterval.toNanos();
    while (!closed.get() && s.isOpen()) {
      Runnable r;
      while ((r = requests.poll()) != null) {
        r.run();
      }
      List<LockKey> read = keys.takePendingReads();
      if (!read.isEmpty()) {
        read(s, read);
      }
      List<PgSession.Note> notes = s.call(c -> PgSession.notes(c, SLICE_MILLIS));
      if (notes == null) {
        // Not pgjdbc: no notifications here. Read every key at each check instead.
        wakeup.await(SLICE_MILLIS * 1_000_000L, () -> !requests.isEmpty());
      } else {
        keys.notices(notes);
      }
      if (time.nanoTime() - nextCheck >= 0) {
        nextCheck = time.nanoTime() + checkInterval.toNanos();
        if (notes == null) {
          read(s, keys.all());
        } else {
          check(s);
        }
      }
    }
    if (!s.isOpen()) {
      throw new SQLException("The watch session ended", "08003");
    }
  }

  /** Reads the leaders of keys from {@code pg_locks}, once. */
  private void read(Session s, List<LockKey> read) throws SQLException {
    Map<LockKey, LeaderInfo> found = new HashMap<>();
    s.call(c -> Holders.leaders(c, read, candidateRole))
        .forEach((k, row) -> found.put(k, info(row)));
    List<PgSession.Note> pending = s.call(c -> PgSession.notes(c, 0));
    keys.read(read, found);
    if (pending != null) {
      keys.notices(pending);
    }
  }

  /** A holder as the read saw it: no term number; when it was seen is set by the view. */
  private static LeaderInfo info(Holders.Row row) {
    return new LeaderInfo(
        row.key(),
        row.candidateId(),
        row.pid(),
        row.database(),
        row.token(),
        OptionalLong.empty(),
        Optional.empty(),
        row.lastRenewal(),
        Optional.empty(),
        row.foreign());
  }

  /** One read of {@code pg_stat_activity} for the current leaders' pids. */
  private void check(Session s) throws SQLException {
    Set<Integer> pids = keys.leaderPids();
    if (pids.isEmpty()) {
      return;
    }
    Map<Integer, String> alive = s.call(c -> alive(c, pids));
    List<PgSession.Note> pending = s.call(c -> PgSession.notes(c, 0));
    if (pending != null) {
      keys.notices(pending); // newer news first: a successor's notice may already be here
    }
    keys.check(pids, alive);
  }

  private static Map<Integer, String> alive(Connection c, Set<Integer> pids) throws SQLException {
    Map<Integer, String> out = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(HolderSql.alive())) {
      ps.setArray(1, c.createArrayOf("int4", pids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getInt(1), String.valueOf(rs.getString(2)));
        }
      }
    }
    return out;
  }

  /** Stops the thread and ends the session. Idempotent. */
  public void close(Duration wait) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    wakeup.wakeAll();
    Thread t = thread;
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(wait.toMillis());
        if (t.isAlive()) {
          LockSession s = session;
          if (s != null) {
            s.abort();
          }
          LOG.warn("{} The watch thread did not stop within {}", spec.context(), wait);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    Session s = session;
    if (s != null) {
      s.end();
    }
  }
}
