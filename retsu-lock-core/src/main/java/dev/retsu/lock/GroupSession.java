package dev.retsu.lock;

import dev.retsu.lock.internal.PgSession;
import dev.retsu.lock.internal.SessionTerminator;
import java.security.SecureRandom;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One dedicated session of a {@link LeaderGroup} and its worker thread ({@code
 * retsu-lock-group-<name>-s<i>}, daemon). The worker owns everything that happens on the session,
 * one thing at a time: opening it, trying keys in batches and taking one fencing token per batch,
 * the refreshes of every key it holds, heartbeats (ownership proofs), releasing keys. Other threads
 * hand it jobs, or end its keys' terms (invalid at once) and leave the rest to it.
 *
 * <p>The session is borrowed from the data source and never returned: it ends through {@link
 * SessionTerminator}, which releases every key it holds at once. A new session is opened after
 * {@code reconnectInterval} when one is lost.
 *
 * <p>Thread-safe: jobs from any thread; the session's state through its {@link Live} generation.
 */
final class GroupSession implements Runnable {

  private static final Logger LOG = LoggerFactory.getLogger(GroupSession.class);
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final long IDLE_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

  private final LeaderGroup group;
  private final GroupSettings settings;
  private final TimeSource time;
  final int index;
  private final String context;
  private final Wakeup wakeup;
  private final ConcurrentLinkedQueue<Runnable> jobs = new ConcurrentLinkedQueue<>();
  private volatile Live live;
  private volatile Thread worker;
  private volatile KeyTerm running;
  private volatile long taskDeadline = Long.MAX_VALUE;
  private volatile boolean interruptedByUs;
  private volatile long nextOpen;
  private volatile long membershipSlot = -1;
  final CompletableFuture<Void> firstOpen = new CompletableFuture<>();

  GroupSession(LeaderGroup group, int index) {
    this.group = group;
    this.settings = group.settings();
    this.time = settings.time();
    this.index = index;
    this.context =
        "[group=" + settings.name() + ", candidate=" + settings.candidateId() + ", s" + index + "]";
    this.wakeup = new Wakeup(time, group::closing);
  }

  void start() {
    Thread t = new Thread(this, "retsu-lock-group-" + settings.name() + "-s" + index);
    t.setDaemon(true);
    worker = t;
    t.start();
  }

  Thread worker() {
    return worker;
  }

  /** The live session, or null between sessions. */
  Live live() {
    Live l = live;
    return l == null || l.ended() ? null : l;
  }

  int heldCount() {
    Live l = live();
    return l == null ? 0 : l.terms.size();
  }

  long membershipSlot() {
    return membershipSlot;
  }

  KeyTerm running() {
    return running;
  }

  long taskDeadline() {
    return taskDeadline;
  }

  void post(Runnable job) {
    jobs.add(job);
    wakeup.wakeAll();
  }

  void wake() {
    wakeup.wakeAll();
  }

  /** Interrupts the worker if it runs a task; the task's term has been claimed already. */
  void interruptTask() {
    Thread w = worker;
    if (running != null && w != null && Thread.currentThread() != w) {
      interruptedByUs = true;
      w.interrupt();
    }
  }

  // ------------------------------------------------------------------ the worker

  @Override
  public void run() {
    try {
      while (!group.closing()) {
        Live l = live;
        if (l != null && l.ended()) {
          l.finish(false);
          live = null;
          nextOpen = time.nanoTime() + settings.reconnectInterval().toNanos();
          continue;
        }
        if (l == null) {
          if (time.nanoTime() - nextOpen >= 0 && open()) {
            continue;
          }
          failQueuedJobs();
          pause(Math.max(1_000_000L, nextOpen - time.nanoTime()));
          continue;
        }
        try {
          runJobs(l);
          runDueRefreshes(l);
          if (!l.ended()
              && time.nanoTime() - (l.lastOwnProof + settings.heartbeatInterval().toNanos()) >= 0) {
            l.prove();
          }
          if (!l.ended()) {
            idle(l);
          }
        } catch (RuntimeException e) {
          // A bug of ours: end this session (its keys' terms end, its locks are released) and
          // open a new one, rather than leave keys held by a session nobody serves.
          LOG.error("{} Session worker failed; ending its session", context, e);
          l.endAll(LossReason.SESSION_LOST, e, false);
        }
      }
    } catch (Error e) {
      LOG.error("{} Session worker failed; ending its session", context, e);
      Live l = live;
      if (l != null) {
        l.endAll(LossReason.SESSION_LOST, e, false);
      }
      throw e;
    } finally {
      Live l = live;
      if (l != null) {
        l.endAll(LossReason.CLOSED, null, false);
        l.finish(false);
      }
      failQueuedJobs();
      firstOpen.complete(null);
    }
  }

  private void pause(long nanos) {
    wakeup.await(nanos, () -> false);
    clearOwnInterrupt();
  }

  private void clearOwnInterrupt() {
    if (Thread.currentThread().isInterrupted() && !group.closing()) {
      Thread.interrupted(); // only the group interrupts its workers; closing is read separately
    }
  }

  private void failQueuedJobs() {
    Runnable j;
    while ((j = jobs.poll()) != null) {
      if (j instanceof Job job) {
        job.skip();
      }
    }
  }

  /** Waits for the next refresh or heartbeat, a job, or a slice; then reads the socket. */
  private void idle(Live l) {
    long now = time.nanoTime();
    long next = l.lastOwnProof + settings.heartbeatInterval().toNanos();
    for (KeyTerm t : l.terms.values()) {
      next = Math.min(next, t.nextRefresh);
    }
    long wait = Math.min(next - now, IDLE_SLICE_NANOS);
    if (wait > 0 && jobs.isEmpty()) {
      wakeup.await(wait, () -> !jobs.isEmpty() || l.ended());
      clearOwnInterrupt();
    }
    if (!l.ended() && jobs.isEmpty() && PgSession.canProbe() && !time.simulated()) {
      PgSession.Evidence e = l.probe(0);
      if (e == PgSession.Evidence.ENDED) {
        l.sessionLost(
            new SQLException("The server ended the session (seen on its socket)", "08006"));
      }
    }
  }

  private void runJobs(Live l) {
    Runnable j;
    while (!l.ended() && (j = jobs.poll()) != null) {
      j.run();
    }
  }

  // ------------------------------------------------------------------ opening

  /** Opens a session; false if it failed (logged, reported to the group). */
  private boolean open() {
    Connection conn;
    try {
      conn = settings.dataSource().getConnection();
    } catch (SQLException e) {
      AdvisoryLockException failed =
          new AdvisoryLockException(
              "Cannot connect to the database (SQLState " + e.getSQLState() + ") " + context,
              group.groupKey(),
              settings.candidateId(),
              e);
      openFailed(failed);
      return false;
    }
    boolean kept = false;
    try {
      conn.setNetworkTimeout(AdvisoryLock.DIRECT, (int) settings.roundTripTimeout().toMillis());
      if (!conn.getAutoCommit()) {
        conn.rollback();
        conn.setAutoCommit(true);
      } else if (PgSession.transaction(conn) == PgSession.Transaction.OPEN
          || PgSession.transaction(conn) == PgSession.Transaction.FAILED) {
        try (Statement s = conn.createStatement()) {
          s.execute("ROLLBACK");
        }
      }
      String nonce = HexFormat.of().formatHex(randomBytes(16));
      Map<String, String> sessionSettings = settings.sessionSettings(nonce);
      long start = time.nanoTime();
      long wallStart = time.wallMillis();
      int pid;
      String database;
      try (PreparedStatement ps = conn.prepareStatement(GroupSql.open())) {
        ps.setArray(1, conn.createArrayOf("text", sessionSettings.keySet().toArray()));
        ps.setArray(2, conn.createArrayOf("text", sessionSettings.values().toArray()));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          pid = rs.getInt(1);
          boolean inRecovery = rs.getBoolean(2);
          String marker = rs.getString(3);
          Array applied = rs.getArray(4);
          database = rs.getString(5);
          if (inRecovery) {
            throw Refusals.hotStandby(group.groupKey(), settings.candidateId());
          }
          if (marker != null && !marker.isEmpty()) {
            throw Refusals.sharedBackend(
                "Backend "
                    + pid
                    + " already carries another retsu-lock session's marker "
                    + GroupSql.MARKER
                    + " before this group set one",
                group.groupKey(),
                settings.candidateId());
          }
          if (applied == null) {
            throw new IllegalStateException("the session settings were not applied " + context);
          }
        }
      }
      Live l =
          new Live(
              conn,
              pid,
              nonce,
              database,
              new SelfFence(time, settings.selfFenceAfter(), start, wallStart));
      l.lastOwnProof = start;
      if (index == 0) {
        takeMembership(l);
      }
      live = l;
      kept = true;
      LOG.info("{} Session opened on backend pid {} in database {}", context, pid, database);
      firstOpen.complete(null);
      group.sessionOpened(this);
      return true;
    } catch (SQLException e) {
      openFailed(
          new AdvisoryLockException(
              "Opening a group session failed (SQLState " + e.getSQLState() + ") " + context,
              group.groupKey(),
              settings.candidateId(),
              e));
      return false;
    } catch (AdvisoryLockException e) {
      openFailed(e);
      return false;
    } finally {
      if (!kept) {
        SessionTerminator.endSession(settings.dataSource(), conn, true, context);
      }
    }
  }

  private void openFailed(AdvisoryLockException e) {
    nextOpen = time.nanoTime() + settings.reconnectInterval().toNanos();
    if (!firstOpen.isDone()) {
      firstOpen.completeExceptionally(e);
    }
    group.sessionFailed(this, e);
  }

  private static byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  /**
   * Session 0 holds the member's slot in the group's membership namespace: the first free one of
   * {@link LeaderGroup#MAX_MEMBERS}, scanned from a random start so that members joining at once
   * rarely try the same slots.
   */
  private void takeMembership(Live l) throws SQLException {
    try (PreparedStatement ps = l.conn.prepareStatement(GroupSql.takeMembership())) {
      ps.setInt(1, RANDOM.nextInt(LeaderGroup.MAX_MEMBERS));
      ps.setInt(2, LeaderGroup.MAX_MEMBERS);
      ps.setInt(3, LeaderGroup.MAX_MEMBERS);
      ps.setInt(4, group.membershipNamespace());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          membershipSlot = rs.getInt(1);
          return;
        }
      }
    }
    throw new AdvisoryLockException(
        "The group already has "
            + LeaderGroup.MAX_MEMBERS
            + " members, the most one group can have; this member cannot join "
            + context,
        group.groupKey(),
        settings.candidateId(),
        null);
  }

  // ------------------------------------------------------------------ jobs

  /** A job with an answer; skipped (answered empty) when the session is gone. */
  private abstract static class Job implements Runnable {
    abstract void skip();
  }

  /** Tries keys on this session; completes with the keys whose terms started. */
  CompletableFuture<List<LockKey>> tryKeys(List<LockKey> keys, int limit) {
    CompletableFuture<List<LockKey>> done = new CompletableFuture<>();
    post(
        new Job() {
          @Override
          public void run() {
            Live l = live();
            done.complete(l == null ? List.of() : l.tryKeys(keys, limit));
          }

          @Override
          void skip() {
            done.complete(List.of());
          }
        });
    return done;
  }

  /** Releases keys gracefully: stop work, onLost, unlock on this session. */
  CompletableFuture<Integer> release(List<LockKey> keys, LossReason why) {
    CompletableFuture<Integer> done = new CompletableFuture<>();
    post(
        new Job() {
          @Override
          public void run() {
            Live l = live();
            done.complete(l == null ? 0 : l.release(keys, why));
          }

          @Override
          void skip() {
            done.complete(0);
          }
        });
    return done;
  }

  /** Reads the group's members (session 0): slots ascending; null when the session is gone. */
  CompletableFuture<long[]> members() {
    CompletableFuture<long[]> done = new CompletableFuture<>();
    post(
        new Job() {
          @Override
          public void run() {
            Live l = live();
            done.complete(l == null ? null : l.members());
          }

          @Override
          void skip() {
            done.complete(null);
          }
        });
    return done;
  }

  // ------------------------------------------------------------------ refreshes

  private void runDueRefreshes(Live l) {
    long now = time.nanoTime();
    List<KeyTerm> due = new ArrayList<>();
    for (KeyTerm t : l.terms.values()) {
      if (now - t.nextRefresh >= 0) {
        due.add(t);
      }
    }
    due.sort(Comparator.comparingLong(t -> t.nextRefresh));
    for (KeyTerm t : due) {
      if (l.ended() || group.closing()) {
        return;
      }
      if (!t.ended()) {
        refresh(l, t);
      }
    }
  }

  private void refresh(Live l, KeyTerm t) {
    if (l.fence().expired()) {
      l.selfFence();
      return;
    }
    LeaderTask task = group.task();
    long start = time.nanoTime();
    Throwable failure = null;
    taskDeadline = start + settings.refreshTimeout().toNanos();
    running = t;
    try {
      task.refresh(t);
    } catch (Throwable e) {
      failure = e;
    } finally {
      running = null;
      taskDeadline = Long.MAX_VALUE;
      if (interruptedByUs) {
        interruptedByUs = false;
        Thread.interrupted();
      }
    }
    Duration took = Duration.ofNanos(time.nanoTime() - start);
    l.afterTask();
    if (l.ended()) {
      return; // the worker's loop finishes the session
    }
    if (t.ended()) {
      l.finishKey(t); // timed out, found unlocked, or ended while it ran
      return;
    }
    if (failure != null) {
      if (group.closing()) {
        return;
      }
      LOG.warn("{} Refresh of {} term {} failed", context, t.key(), t.term().number(), failure);
      group.listeners().refreshed(t, took, failure);
      if (Diagnostics.isSessionLost(Diagnostics.sqlState(failure))) {
        l.sessionLost(failure);
      } else {
        l.endKey(t, LossReason.REFRESH_FAILED, failure);
      }
      return;
    }
    group.listeners().refreshed(t, took, null);
    t.nextRefresh = time.nanoTime() + settings.refreshInterval().toNanos();
  }

  /** The watchdog's duty for this session: its deadline and its running refresh's timeout. */
  void watch() {
    Live l = live;
    if (l == null || l.ended()) {
      return;
    }
    if (l.fence().expired()) {
      l.selfFence();
      return;
    }
    KeyTerm t = running;
    long deadline = taskDeadline;
    if (t == null || deadline == Long.MAX_VALUE) {
      return;
    }
    long over = time.nanoTime() - deadline;
    if (over >= 0 && !t.ended()) {
      if (t.claim(
          LossReason.REFRESH_TIMED_OUT,
          new TimeoutException(
              "The refresh ran longer than refreshTimeout " + settings.refreshTimeout()))) {
        group.listeners().refreshed(t, settings.refreshTimeout(), t.cause());
        interruptTask();
      }
    } else if (over - settings.closeTimeout().toNanos() >= 0 && running == t) {
      LOG.error(
          "{} The refresh of {} ignored the interrupt for closeTimeout {}; aborting the session",
          context,
          t.key(),
          settings.closeTimeout());
      l.endAll(
          LossReason.SELF_FENCED,
          new TimeoutException("A refresh on this session ignored its interrupt"),
          true);
    }
  }

  /** Ends every key's term at once (close); the worker, or close() after closeTimeout, finishes. */
  void shutdown() {
    Live l = live;
    if (l != null) {
      l.endAll(LossReason.CLOSED, null, false);
    }
    wakeup.wakeAll();
  }

  /** close() gave up waiting for the worker: tell listeners and abort the session from here. */
  void abandon() {
    Live l = live;
    if (l != null) {
      l.finish(true);
    }
  }

  @Override
  public String toString() {
    return "GroupSession" + context;
  }

  // ------------------------------------------------------------------ one session generation

  /** One opened session and the keys it holds. Ends once; never reopened. */
  final class Live {
    final Connection conn;
    final int pid;
    final String nonce;
    final String database;
    private final ReentrantLock io = new ReentrantLock();
    private final SelfFence fence;
    final Map<LockKey, KeyTerm> terms = new ConcurrentHashMap<>();

    /** Why the session ended; null while it lives (so a reason is always there once ended). */
    private final AtomicReference<LossReason> reason = new AtomicReference<>();

    private final AtomicBoolean finished = new AtomicBoolean();
    private volatile Throwable cause;
    private volatile boolean touched;
    private volatile boolean unlockSuspected;
    volatile long lastOwnProof;

    Live(Connection conn, int pid, String nonce, String database, SelfFence fence) {
      this.conn = conn;
      this.pid = pid;
      this.nonce = nonce;
      this.database = database;
      this.fence = fence;
    }

    Connection connection() {
      return conn;
    }

    ReentrantLock io() {
      return io;
    }

    SelfFence fence() {
      return fence;
    }

    int pid() {
      return pid;
    }

    String context(LockKey key) {
      return "[group="
          + settings.name()
          + ", key="
          + key
          + ", candidate="
          + settings.candidateId()
          + ", s"
          + index
          + ", pid="
          + pid
          + "]";
    }

    boolean ended() {
      return reason.get() != null;
    }

    LossReason reason() {
      return reason.get();
    }

    Throwable cause() {
      return cause;
    }

    void touch() {
      touched = true;
    }

    void suspectUnlock() {
      unlockSuspected = true;
      touched = true;
    }

    boolean unlockSuspected() {
      return unlockSuspected;
    }

    /** The socket's evidence; null when the session stayed busy for {@code maxWaitNanos}. */
    PgSession.Evidence probe(long maxWaitNanos) {
      try {
        if (!io.tryLock(Math.max(0, maxWaitNanos), TimeUnit.NANOSECONDS)) {
          return null;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
      try {
        return ended() ? PgSession.Evidence.ENDED : PgSession.probe(conn);
      } finally {
        io.unlock();
      }
    }

    void selfFence() {
      endAll(LossReason.SELF_FENCED, fence.timeout(settings.bounds()), true);
    }

    void sessionLost(Throwable e) {
      endAll(LossReason.SESSION_LOST, e, false);
    }

    /**
     * Ends every key's term on this session at once (invalid now, a running refresh interrupted);
     * with {@code abortNow} listeners are told and the session aborted right here (self-fencing),
     * otherwise the worker finishes.
     */
    void endAll(LossReason why, Throwable error, boolean abortNow) {
      cause = error;
      if (!reason.compareAndSet(null, why)) {
        return;
      }
      for (KeyTerm t : terms.values()) {
        t.claim(why, error);
      }
      interruptTask();
      if (why != LossReason.CLOSED) {
        LOG.warn(
            "{} Session of backend pid {} ended ({}), ending the terms of its {} keys{}",
            context,
            pid,
            why,
            terms.size(),
            error == null ? "" : ": " + error);
      }
      if (abortNow) {
        finish(true);
      } else {
        wakeup.wakeAll();
      }
    }

    /** Tells listeners of every key's loss, then ends the session; once. */
    void finish(boolean abort) {
      if (!finished.compareAndSet(false, true)) {
        return;
      }
      try {
        List<KeyTerm> all = new ArrayList<>(terms.values());
        all.sort(Comparator.comparing(t -> t.term().number()));
        for (KeyTerm t : all) {
          t.claim(reason() != null ? reason() : LossReason.CLOSED, cause); // one added meanwhile
          group.listeners().lost(t);
          terms.remove(t.key(), t);
          group.termEnded(t);
        }
      } finally {
        if (index == 0) {
          membershipSlot = -1;
        }
        if (abort) {
          SessionTerminator.endSession(settings.dataSource(), conn, true, context);
        } else {
          SessionTerminator.endSession(settings.dataSource(), conn, io, context);
        }
        group.sessionEnded(GroupSession.this);
      }
    }

    /** Ends one key's term from any thread; its lock is released by the worker when graceful. */
    void endKey(KeyTerm t, LossReason why, Throwable error) {
      if (!t.claim(why, error)) {
        return;
      }
      if (running == t && Thread.currentThread() != worker) {
        interruptTask(); // the worker finishes the key when the refresh returns
        return;
      }
      if (Thread.currentThread() == worker || !unlocks(why)) {
        finishKey(t);
      } else {
        post(this::finishEndedKeys);
      }
    }

    private void finishEndedKeys() {
      for (KeyTerm t : new ArrayList<>(terms.values())) {
        if (t.ended() && running != t) {
          finishKey(t);
        }
      }
    }

    /** onLost for an ended key, then its unlock when its end was graceful; once per term. */
    void finishKey(KeyTerm t) {
      if (!terms.remove(t.key(), t)) {
        return;
      }
      group.listeners().lost(t);
      group.termEnded(t);
      if (unlocks(t.reason()) && !ended() && Thread.currentThread() == worker) {
        unlock(List.of(t.key()));
      }
    }

    private boolean unlocks(LossReason why) {
      return why == LossReason.CLOSED
          || why == LossReason.REFRESH_FAILED
          || why == LossReason.REFRESH_TIMED_OUT;
    }

    /**
     * Worker: stop work for each key (invalid), tell listeners, then unlock them in one statement.
     */
    int release(List<LockKey> keys, LossReason why) {
      List<KeyTerm> ending = new ArrayList<>();
      for (LockKey k : keys) {
        KeyTerm t = terms.get(k);
        if (t != null && t.claim(why, null)) {
          ending.add(t);
        }
      }
      List<LockKey> unlock = new ArrayList<>();
      for (KeyTerm t : ending) {
        if (terms.remove(t.key(), t)) {
          group.listeners().lost(t);
          group.termEnded(t);
          unlock.add(t.key());
        }
      }
      if (!unlock.isEmpty() && !ended()) {
        unlock(unlock);
      }
      return unlock.size();
    }

    private void unlock(List<LockKey> keys) {
      io.lock();
      try {
        long start = time.nanoTime();
        try (PreparedStatement ps = conn.prepareStatement(GroupSql.unlockBatch())) {
          GroupKeys.bind(conn, ps, 1, keys);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            int got = rs.getInt(1);
            Integer[] notHeld = (Integer[]) rs.getArray(2).getArray();
            if (got != pid) {
              endAll(
                  LossReason.POOLER_DETECTED,
                  Refusals.pidChanged(pid, got, keys.get(0), settings.candidateId()),
                  false);
              return;
            }
            if (notHeld.length > 0) {
              LOG.warn(
                  "{} {} released key(s) were no longer held by this session (user SQL unlocked"
                      + " them?), e.g. {}",
                  context,
                  notHeld.length,
                  keys.get(notHeld[0] - 1));
            }
          }
        }
        fence.proved(start);
      } catch (SQLException e) {
        // Not knowing whether the keys are still held, end the session: that releases them.
        endAll(LossReason.SESSION_LOST, e, false);
      } finally {
        io.unlock();
      }
    }

    /**
     * After a refresh: autocommit back on and nothing left open; a full proof if unlock is
     * suspected.
     */
    void afterTask() {
      if (ended()) {
        return;
      }
      io.lock();
      try {
        if (!conn.getAutoCommit()) {
          conn.rollback();
          conn.setAutoCommit(true);
          LOG.warn("{} A refresh left autocommit off; rolled back and turned it back on", context);
        } else {
          PgSession.Transaction tx = PgSession.transaction(conn);
          if (tx == PgSession.Transaction.OPEN || tx == PgSession.Transaction.FAILED) {
            try (Statement s = conn.createStatement()) {
              s.execute("ROLLBACK");
            }
            LOG.warn("{} A refresh left a transaction open; rolled it back", context);
          }
        }
      } catch (SQLException e) {
        if (Diagnostics.isSessionLost(e.getSQLState())) {
          sessionLost(e);
        } else {
          endAll(LossReason.SESSION_LOST, e, false);
        }
        return;
      } finally {
        io.unlock();
      }
      if (unlockSuspected) {
        prove();
      }
    }

    /**
     * Proves that this session holds its keys. While nothing touched the session since the last
     * full proof: pid and marker in O(1). Otherwise one {@code pg_locks} read for the whole
     * session; keys it does not show end ({@link LossReason#LOCK_NOT_HELD}). Never throws: it ends
     * terms.
     */
    void prove() {
      if (ended()) {
        return;
      }
      List<KeyTerm> missing = new ArrayList<>();
      io.lock();
      try {
        if (ended()) {
          return;
        }
        long start = time.nanoTime();
        int timeout =
            (int)
                Math.max(
                    1,
                    Math.min(
                        settings.roundTripTimeout().toMillis(),
                        TimeUnit.NANOSECONDS.toMillis(fence.nanosLeft())));
        int previous = conn.getNetworkTimeout();
        conn.setNetworkTimeout(AdvisoryLock.DIRECT, timeout);
        try {
          boolean full = touched || unlockSuspected;
          if (!full) {
            try (Statement s = conn.createStatement();
                ResultSet rs = s.executeQuery(GroupSql.quickProof())) {
              rs.next();
              int got = rs.getInt(1);
              String marker = rs.getString(2);
              if (got != pid) {
                endAll(
                    LossReason.POOLER_DETECTED,
                    Refusals.pidChanged(pid, got, group.groupKey(), settings.candidateId()),
                    false);
                return;
              }
              full = !nonce.equals(marker); // RESET ALL or DISCARD ALL ran: look at the locks
            }
          }
          if (full) {
            touched = false;
            unlockSuspected = false;
            Set<LockKey> held = fullProof();
            if (held == null) {
              return;
            }
            for (KeyTerm t : terms.values()) {
              if (!held.contains(t.key())) {
                missing.add(t);
              }
            }
          }
        } finally {
          if (!ended()) {
            conn.setNetworkTimeout(AdvisoryLock.DIRECT, previous);
          }
        }
        fence.proved(start);
        lastOwnProof = start;
      } catch (SQLException e) {
        if (Diagnostics.isSessionLost(e.getSQLState())) {
          sessionLost(e);
        } else {
          // The proof could not run on a live session: ownership unknown, so end the session.
          endAll(LossReason.SESSION_LOST, e, false);
        }
        return;
      } finally {
        io.unlock();
      }
      for (KeyTerm t : missing) {
        LOG.warn(
            "{} {} is no longer held by this session (unlocked through user SQL?)",
            context,
            t.key());
        endKey(
            t,
            LossReason.LOCK_NOT_HELD,
            new IllegalStateException(
                "Backend " + pid + " is alive but no longer holds " + t.key()));
      }
    }

    /** The full proof's statement, with the I/O lock held; null when the session ended. */
    private Set<LockKey> fullProof() throws SQLException {
      Map<String, String> s = settings.sessionSettings(nonce);
      try (PreparedStatement ps = conn.prepareStatement(GroupSql.fullProof())) {
        ps.setArray(1, conn.createArrayOf("text", s.keySet().toArray()));
        ps.setArray(2, conn.createArrayOf("text", s.values().toArray()));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          int got = rs.getInt(1);
          if (got != pid) {
            endAll(
                LossReason.POOLER_DETECTED,
                Refusals.pidChanged(pid, got, group.groupKey(), settings.candidateId()),
                false);
            return null;
          }
          return GroupKeys.fromPgLocks(
              longs(rs.getArray(3)), longs(rs.getArray(4)), ints(rs.getArray(5)));
        }
      }
    }

    private Long[] longs(Array a) throws SQLException {
      return a == null ? null : (Long[]) a.getArray();
    }

    private Integer[] ints(Array a) throws SQLException {
      return a == null ? null : (Integer[]) a.getArray();
    }

    /** Worker: the group's member slots, one probe per slot; null if it failed. */
    long[] members() {
      io.lock();
      try (PreparedStatement ps = conn.prepareStatement(GroupSql.members())) {
        long start = time.nanoTime();
        ps.setInt(1, LeaderGroup.MAX_MEMBERS);
        ps.setInt(2, (int) membershipSlot); // -1 before this member holds one
        ps.setInt(3, group.membershipNamespace());
        ps.setInt(4, group.membershipNamespace());
        Long[] slots;
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          slots = (Long[]) rs.getArray(1).getArray();
        }
        fence.proved(start);
        long[] out = new long[slots.length];
        for (int i = 0; i < slots.length; i++) {
          out[i] = slots[i];
        }
        if (membershipSlot < 0 && index == 0) {
          takeMembership(this);
        }
        return out;
      } catch (SQLException e) {
        if (Diagnostics.isSessionLost(e.getSQLState())) {
          sessionLost(e);
        } else {
          LOG.warn("{} Reading the group's members failed: {}", context, e.toString());
        }
        return null;
      } finally {
        io.unlock();
      }
    }

    /**
     * Worker: tries keys in batches of {@code batchSize}; each batch that took keys is followed by
     * one fencing-token statement for all of them. Returns the keys whose terms started.
     */
    List<LockKey> tryKeys(List<LockKey> keys, int limit) {
      List<LockKey> started = new ArrayList<>();
      for (int from = 0;
          from < keys.size() && started.size() < limit && !ended() && !group.closing();
          from += settings.batchSize()) {
        List<LockKey> batch =
            keys.subList(from, Math.min(keys.size(), from + settings.batchSize()));
        List<KeyTerm> terms = tryBatch(batch, limit - started.size());
        for (KeyTerm t : terms) {
          group.listeners().acquired(t);
          started.add(t.key());
        }
      }
      return started;
    }

    private List<KeyTerm> tryBatch(List<LockKey> batch, int limit) {
      List<LockKey> granted = new ArrayList<>();
      FencingToken token;
      long startNanos;
      io.lock();
      try {
        if (ended()) {
          return List.of();
        }
        startNanos = time.nanoTime();
        try (PreparedStatement ps = conn.prepareStatement(GroupSql.tryLockBatch())) {
          int next = GroupKeys.bind(conn, ps, 1, batch);
          ps.setInt(next, pid);
          ps.setString(next + 1, nonce);
          ps.setInt(next + 2, limit);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            int got = rs.getInt(1);
            boolean inRecovery = rs.getBoolean(2);
            String marker = rs.getString(3);
            Integer[] ords = (Integer[]) rs.getArray(4).getArray();
            if (got != pid) {
              endAll(
                  LossReason.POOLER_DETECTED,
                  Refusals.pidChanged(pid, got, batch.get(0), settings.candidateId()),
                  false);
              return List.of();
            }
            if (inRecovery) {
              endAll(
                  LossReason.HOT_STANDBY_DETECTED,
                  Refusals.hotStandby(batch.get(0), settings.candidateId()),
                  false);
              return List.of();
            }
            if (!nonce.equals(marker)) {
              suspectUnlock(); // RESET ALL or DISCARD ALL through user SQL: the next proof looks
              return List.of();
            }
            for (Integer o : ords) {
              granted.add(batch.get(o - 1));
            }
          }
        }
        fence.proved(startNanos);
        if (granted.isEmpty()) {
          return List.of();
        }
        token = token(granted);
        if (token == null) {
          return List.of();
        }
      } catch (SQLException e) {
        if (Diagnostics.isSessionLost(e.getSQLState())) {
          sessionLost(e);
        } else {
          // A failed statement may still have taken some keys (session locks survive the error):
          // end the session, which releases them, rather than keep locks without terms.
          LOG.warn(
              "{} Trying {} keys failed; ending the session: {}",
              context,
              batch.size(),
              e.toString());
          endAll(LossReason.SESSION_LOST, e, false);
        }
        return List.of();
      } finally {
        io.unlock();
      }
      List<KeyTerm> out = new ArrayList<>(granted.size());
      java.time.Instant now = time.now();
      long nowNanos = time.nanoTime();
      for (LockKey k : granted) {
        Term term = new Term(group.nextTermNumber(k), k, settings.candidateId(), now, token, pid);
        KeyTerm t = new KeyTerm(term, this);
        t.nextRefresh = nowNanos;
        terms.put(k, t);
        group.termStarted(t);
        out.add(t);
      }
      if (ended()) {
        // Lost while we built the terms: end them the same way (they were never announced).
        for (KeyTerm t : out) {
          t.claim(reason(), cause);
        }
      }
      return out;
    }

    /** One durable fencing token for every key of a batch; null (keys unlocked) on failure. */
    private FencingToken token(List<LockKey> granted) throws SQLException {
      try (PreparedStatement ps = conn.prepareStatement(SessionSql.fencingToken())) {
        ps.setString(1, settings.applicationName());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          int got = rs.getInt(4);
          if (got != pid) {
            endAll(
                LossReason.POOLER_DETECTED,
                Refusals.pidChanged(pid, got, granted.get(0), settings.candidateId()),
                false);
            return null;
          }
          return new FencingToken(rs.getInt(2), rs.getLong(1));
        }
      } catch (SQLException e) {
        if (Diagnostics.isSessionLost(e.getSQLState())) {
          throw e;
        }
        LOG.warn(
            "{} Taking the fencing token failed; releasing the {} keys just taken: {}",
            context,
            granted.size(),
            e.toString());
        if (!conn.getAutoCommit()) {
          conn.rollback();
        }
        unlock(granted);
        return null;
      }
    }

    /** Keys held right now, for tests and status. */
    List<LockKey> heldKeys() {
      List<LockKey> out = new ArrayList<>(terms.keySet());
      return Collections.unmodifiableList(out);
    }
  }
}
