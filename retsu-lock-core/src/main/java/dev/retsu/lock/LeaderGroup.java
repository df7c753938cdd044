package dev.retsu.lock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process's share of many keys (shards, tenants, partitions): the members of a group, in any
 * number of processes, spread the group's keys fairly among themselves, and each key has its own
 * terms, fencing tokens and callbacks, as if it had its own {@link LeaderLoop}, but over a small,
 * bounded number of database sessions per member.
 *
 * <pre>{@code
 * LeaderGroup group =
 *     LeaderGroup.builder(dataSource, "billing", LockKey.named("billing", "tenant-1"), ...)
 *         .candidateId("worker-1")
 *         .build();
 * group.start(ctx -> { ctx.ensureLeader(); ... ctx.term().key() ... });
 * }</pre>
 *
 * <h2>Sessions</h2>
 *
 * Each member opens {@code sessions} (default {@value #DEFAULT_SESSIONS}, at most {@value
 * #MAX_SESSIONS}, never more than there are keys) dedicated sessions, borrowed from the data source
 * and never returned to it: a session ends through the same terminator as a lease, which releases
 * every key it holds at once. Each session carries the leader's server bounds (keepalives, {@code
 * tcp_user_timeout}, {@code idle_session_timeout}, ...) and a random marker ({@code
 * retsu.lock_session}) from the statement that opens it, before it takes any key; that statement
 * refuses a hot standby and a backend that already carries a marker (a backend shared through a
 * transaction-mode pooler), and every statement that takes keys re-checks the backend pid, the
 * primary and the marker before locking anything.
 *
 * <h2>Work on the lock's own session, per key</h2>
 *
 * Each session has one worker thread, {@code retsu-lock-group-<name>-s<i>}. The task runs on it,
 * once per key every {@code refreshInterval}, serialised per session, with a {@link LeaderContext}
 * of that key: {@link LeaderContext#connection()} is a guarded view of the session that holds the
 * key (no path hands out the session, {@code close()} does nothing), and it fails with SQLState
 * 08003 as soon as that key's term is over.
 *
 * <h2>Terms and tokens</h2>
 *
 * Keys are tried in batches: one statement tries up to {@code batchSize} keys with {@code
 * pg_try_advisory_lock}, and one durable fencing token (the same statement as a loop's: a flushed
 * transactional WAL message) is taken for all keys that batch took. Keys taken together share a
 * token value; per key, tokens strictly increase from term to term, because a key's next term
 * begins after its lock was released and its token is taken after that. Listeners hear {@code
 * onAcquired}, {@code onRefreshSucceeded}/{@code onRefreshFailed} and {@code onLost} per key
 * ({@link Term#key()} says which); {@code onAttempt} is not used.
 *
 * <h2>How terms end</h2>
 *
 * <ul>
 *   <li><b>A session ends</b> (terminated, server restart, connection broken): exactly the terms of
 *       the keys it held end ({@link LossReason#SESSION_LOST}): each turns invalid, a running
 *       refresh is interrupted, then {@code onLost} per key. The session is opened again after
 *       {@code reconnectInterval} and the keys contended again.
 *   <li><b>Self-fencing per session</b>: when no round trip on a session has succeeded for {@code
 *       selfFenceAfter} (at least 1 s below the server-side bound), every key on it stops acting
 *       ({@link LossReason#SELF_FENCED}) and the session is aborted, before the server could free
 *       its locks.
 *   <li><b>Releasing one key</b> (rebalance, a refresh that failed or timed out): its term turns
 *       invalid, its work has stopped (refreshes are serial per session, so none runs), {@code
 *       onLost}, then the key is unlocked on our own session.
 *   <li><b>Close</b>: every term turns invalid, running refreshes are interrupted and awaited (up
 *       to {@code closeTimeout}), {@code onLost} per key, then each session is ended, which
 *       releases its keys.
 * </ul>
 *
 * <h2>Ownership proof in O(1)</h2>
 *
 * PostgreSQL releases a session advisory lock only when the session ends or that same session
 * unlocks it. So every {@code heartbeatInterval} each session runs {@code SELECT pg_backend_pid(),
 * current_setting('retsu.lock_session', true)}: same backend and same marker prove every key on it,
 * whatever the size of {@code pg_locks}. Once user code has used the session (any call through a
 * key's view), the next proof reads {@code pg_locks} once for the whole session and ends the terms
 * of keys it no longer holds ({@link LossReason#LOCK_NOT_HELD}); SQL that names an unlock, {@code
 * DISCARD} or {@code RESET} makes {@link LeaderContext#ensureLeader()} take that proof at once.
 *
 * <h2>Fair spread and membership</h2>
 *
 * Each member holds one advisory lock in the group's membership namespace ({@code (ns, slot)} with
 * {@code ns} the first 4 bytes of SHA-256("retsu-lock-group:" + name) and a slot of {@link
 * #MAX_MEMBERS}) on its first session. Every {@code membershipInterval} (default 2 s) it reads the
 * group's membership with one statement that probes each slot in shared mode (a free slot is taken
 * and given back at once, a held one refuses), whatever the number of locks on the server, and
 * rebalances: with {@code M} members each holds at most {@code ceil(N / M)}; a member above it
 * yields the surplus gracefully, a member below it tries free keys, preferring its own range of the
 * key list so members rarely contend. See {@code Rebalancer} and the README for the bounds: a key
 * freed by a crash, a leave or a yield is taken within about one interval, a joining member is
 * balanced within about two. After a server restart every member's sessions come back one by one: a
 * member whose membership session was opened again plans with no fewer members than it saw before
 * for {@code heartbeatInterval + reconnectInterval + membershipInterval}, and rebalances as soon as
 * all its sessions are open, so each takes its own share of the freed keys rather than the first
 * one back taking most of them.
 *
 * <p>Every member must be built with the same name and the same keys in the same order.
 * Thread-safe.
 */
public final class LeaderGroup implements AutoCloseable {

  /** Default sessions per member: 4. */
  public static final int DEFAULT_SESSIONS = 4;

  /** The most sessions per member: 16. */
  public static final int MAX_SESSIONS = 16;

  /**
   * The most members of one group: 256. Each member holds one of 256 membership slots, and reading
   * the membership probes each slot once (no {@code pg_locks} read), so its cost does not grow with
   * the number of locks on the server.
   */
  public static final int MAX_MEMBERS = 256;

  /** The most keys in one group: 100,000. */
  public static final int MAX_KEYS = 100_000;

  /** Default keys tried by one statement: 1,000. */
  public static final int DEFAULT_BATCH_SIZE = 1_000;

  /** Default limit on one refresh of one key: 5 seconds. */
  public static final Duration DEFAULT_REFRESH_TIMEOUT = Duration.ofSeconds(5);

  /** Default interval between membership reads and rebalances: 2 seconds. */
  public static final Duration DEFAULT_MEMBERSHIP_INTERVAL = Duration.ofSeconds(2);

  /** Default wait before a lost session is opened again: 1 second. */
  public static final Duration DEFAULT_RECONNECT_INTERVAL = Duration.ofSeconds(1);

  /** The least number of keys tried per rebalance when this member is below its quota: 256. */
  static final int MIN_TRIES_PER_ROUND = 256;

  private static final Logger LOG = LoggerFactory.getLogger(LeaderGroup.class);
  private static final long WATCH_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  /** The lifecycle of a group. */
  public enum State {
    /** Built, not started. */
    NEW,
    /** Running: holding and contending for keys. */
    RUNNING,
    /** Stopped by a failure ({@link #failure()} says which); holds nothing. */
    FAILED,
    /** Closed. */
    CLOSED
  }

  private final GroupSettings settings;
  private final GroupListeners listeners;
  private final Map<LockKey, Integer> index = new HashMap<>();
  private final AtomicLongArray termNumbers;
  private final Map<LockKey, KeyTerm> owned = new ConcurrentHashMap<>();
  private final int namespace;
  private final LockKey groupKey;
  private final List<GroupSession> sessions = new ArrayList<>();
  private final Rebalancer rebalancer;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicLong rebalances = new AtomicLong();
  private final AtomicLong acquisitions = new AtomicLong();
  private final AtomicLong losses = new AtomicLong();
  private volatile int members;
  private volatile LeaderTask task;
  private volatile Throwable failure;
  private volatile Thread coordinator;
  private volatile Thread watchdog;

  /** Set when every session is open again after one ended: the coordinator rebalances at once. */
  private final AtomicBoolean roundNow = new AtomicBoolean();

  // The coordinator's alone: the membership slot of the last round, and until when this member
  // plans with the view from before it rejoined (see Rebalancer#plannedMembers).
  private long lastSlot = -1;
  private long rejoiningUntil;
  private boolean rejoining;

  LeaderGroup(GroupSettings settings) {
    this.settings = settings;
    this.listeners = new GroupListeners(new Listeners(settings.listeners(), settings.context()));
    for (int i = 0; i < settings.keys().size(); i++) {
      index.put(settings.keys().get(i), i);
    }
    this.termNumbers = new AtomicLongArray(settings.keys().size());
    this.namespace = GroupKeys.membershipNamespace(settings.name());
    this.groupKey = LockKey.of(namespace, 0);
    this.rebalancer = new Rebalancer(settings.keys().size());
    for (int i = 0; i < settings.sessionCount(); i++) {
      sessions.add(new GroupSession(this, i));
    }
  }

  /**
   * Returns a builder for a group over the given keys.
   *
   * @param dataSource where sessions come from; pooled or not (sessions are never returned)
   * @param name the group's name, the same in every member: 1 to 40 of {@code [A-Za-z0-9._-]}
   * @param keys the keys, distinct, the same list in the same order in every member (1 to {@value
   *     #MAX_KEYS})
   * @return a builder
   */
  public static LeaderGroupBuilder builder(DataSource dataSource, String name, List<LockKey> keys) {
    return new LeaderGroupBuilder(dataSource, name, keys);
  }

  /**
   * Returns a builder for a group over {@code partitions} keys {@code LockKey.named(namespace,
   * "0")} to {@code LockKey.named(namespace, String.valueOf(partitions - 1))}, named after the
   * namespace.
   *
   * @param dataSource where sessions come from
   * @param namespace the keys' namespace, also the group's name
   * @param partitions how many keys, 1 to {@value #MAX_KEYS}
   * @return a builder
   */
  public static LeaderGroupBuilder partitioned(
      DataSource dataSource, String namespace, int partitions) {
    Objects.requireNonNull(namespace, "namespace");
    if (partitions < 1 || partitions > MAX_KEYS) {
      throw new IllegalArgumentException(
          "partitions must be within 1.." + MAX_KEYS + ", but was " + partitions);
    }
    return new LeaderGroupBuilder(
        dataSource, namespace, GroupSettings.partitions(namespace, partitions));
  }

  // ------------------------------------------------------------------ what callers read

  /**
   * Returns the group's name.
   *
   * @return the name
   */
  public String name() {
    return settings.name();
  }

  /**
   * Returns this member's id.
   *
   * @return the id
   */
  public String candidateId() {
    return settings.candidateId();
  }

  /**
   * Returns the group's keys, in the order every member shares.
   *
   * @return the keys
   */
  public List<LockKey> keys() {
    return settings.keys();
  }

  /**
   * Returns the lifecycle state.
   *
   * @return the state
   */
  public State state() {
    return state.get();
  }

  /**
   * Returns what stopped the group, once it is {@link State#FAILED}.
   *
   * @return the failure, or empty
   */
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure);
  }

  /**
   * Returns the keys this member leads right now: terms announced ({@code onAcquired} delivered)
   * that have not ended.
   *
   * @return a snapshot, in the group's key order
   */
  public List<LockKey> heldKeys() {
    List<LockKey> out = new ArrayList<>();
    for (Map.Entry<LockKey, KeyTerm> e : owned.entrySet()) {
      if (e.getValue().isHeld()) {
        out.add(e.getKey());
      }
    }
    out.sort(Comparator.comparingInt(index::get));
    return out;
  }

  /**
   * Returns how many keys this member leads right now.
   *
   * @return the count
   */
  public int heldCount() {
    int n = 0;
    for (KeyTerm t : owned.values()) {
      if (t.isHeld()) {
        n++;
      }
    }
    return n;
  }

  /**
   * Returns the current term of a key, while this member leads it.
   *
   * @param key one of the group's keys
   * @return the term, or empty
   */
  public Optional<Term> currentTerm(LockKey key) {
    KeyTerm t = owned.get(key);
    return t == null || !t.isHeld() ? Optional.empty() : Optional.of(t.term());
  }

  /**
   * Returns the backend pid of the session that holds a key, while this member leads it.
   *
   * @param key one of the group's keys
   * @return the pid, or empty
   */
  public Optional<Integer> sessionPid(LockKey key) {
    return currentTerm(key).map(Term::backendPid);
  }

  /**
   * Returns how many sessions this member has open right now.
   *
   * @return 0 to {@code sessions}
   */
  public int openSessions() {
    int n = 0;
    for (GroupSession s : sessions) {
      if (s.live() != null) {
        n++;
      }
    }
    return n;
  }

  /**
   * Returns the number of members this member saw at its last membership read.
   *
   * @return members, 0 before the first read
   */
  public int members() {
    return members;
  }

  /**
   * Returns how many keys this member has yielded to rebalance the group (graceful releases because
   * it held more than its fair share).
   *
   * @return the count since start
   */
  public long rebalances() {
    return rebalances.get();
  }

  /**
   * Returns how many key terms this member has started.
   *
   * @return the count since start
   */
  public long acquisitions() {
    return acquisitions.get();
  }

  /**
   * Returns how many key terms of this member have ended.
   *
   * @return the count since start
   */
  public long losses() {
    return losses.get();
  }

  /**
   * Adds a listener to a group that may already run; it hears what happens from now on.
   *
   * @param listener the listener
   */
  public void addListener(LeaderListener listener) {
    listeners.add(listener);
  }

  /**
   * Removes a listener.
   *
   * @param listener the listener
   * @return true if it was registered
   */
  public boolean removeListener(LeaderListener listener) {
    return listeners.remove(listener);
  }

  // ------------------------------------------------------------------ lifecycle

  /**
   * Starts the group: opens the sessions (each on its worker thread), then contends for keys. It
   * returns once the first session is open, or throws if it could not be: a database that cannot be
   * reached, a hot standby or a transaction-mode pooler fails fast here. A group built with {@code
   * failFast(false)} returns instead and its sessions keep trying (a transaction pooler still stops
   * it).
   *
   * @param task the work for one key, run on the session that holds it every {@code
   *     refreshInterval}; {@link LeaderContext#term()} says which key
   * @throws AdvisoryLockException when the first session could not be opened (the group is then
   *     {@link State#FAILED})
   * @throws IllegalStateException if the group was started or closed already
   */
  public void start(LeaderTask task) {
    Objects.requireNonNull(task, "task");
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException(
          "A LeaderGroup starts once; this one is " + state.get() + " " + settings.context());
    }
    this.task = task;
    LOG.info(
        "{} Leader group started: {} keys over {} sessions, refresh {}, membership every {}, {}",
        settings.context(),
        settings.keys().size(),
        sessions.size(),
        settings.refreshInterval(),
        settings.membershipInterval(),
        settings.bounds());
    sessions.forEach(GroupSession::start);
    try {
      long bound = settings.roundTripTimeout().toMillis() * 3;
      sessions.get(0).firstOpen.get(bound, TimeUnit.MILLISECONDS);
      // Let the other sessions open too, so the first keys spread over all of them; one that
      // fails is retried by its worker and does not fail the start.
      CompletableFuture.allOf(
              sessions.stream()
                  .map(s -> s.firstOpen.exceptionally(e -> null))
                  .toArray(CompletableFuture[]::new))
          .get(bound, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (!settings.failFast() && !closing()) {
        LOG.warn(
            "{} The first session could not be opened; the sessions keep trying every {}: {}",
            settings.context(),
            settings.reconnectInterval(),
            cause.getMessage());
        startCoordinator();
        return;
      }
      fail(cause);
      throw cause instanceof AdvisoryLockException
          ? (AdvisoryLockException) cause
          : new AdvisoryLockException("Starting the group failed", groupKey, candidateId(), cause);
    } catch (java.util.concurrent.TimeoutException e) {
      if (!settings.failFast() && !closing()) {
        LOG.warn("{} The first session did not open in time; it keeps trying", settings.context());
        startCoordinator();
        return;
      }
      fail(e);
      throw new AdvisoryLockException(
          "The first session did not open in time", groupKey, candidateId(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      fail(e);
      throw new AdvisoryLockException("Interrupted while starting", groupKey, candidateId(), e);
    }
    startCoordinator();
  }

  private void startCoordinator() {
    Thread c = new Thread(this::coordinate, "retsu-lock-group-" + name() + "-coordinator");
    c.setDaemon(true);
    coordinator = c;
    Thread w = new Thread(this::watch, "retsu-lock-group-" + name() + "-watchdog");
    w.setDaemon(true);
    watchdog = w;
    c.start();
    w.start();
  }

  private void fail(Throwable cause) {
    failure = cause;
    LOG.error(
        "{} Leader group failed; it holds and contends for nothing", settings.context(), cause);
    stop();
    state.set(State.FAILED);
  }

  /**
   * Stops the group: every key's term turns invalid, running refreshes are interrupted and awaited
   * (up to {@code closeTimeout}), listeners hear {@code onLost} per key, then every session is
   * ended (which releases its keys and the membership slot). Idempotent; never throws.
   */
  @Override
  public void close() {
    if (state.get() == State.NEW) {
      state.compareAndSet(State.NEW, State.CLOSED);
    }
    if (stop()) {
      state.compareAndSet(State.RUNNING, State.CLOSED);
      LOG.info("{} Leader group closed", settings.context());
    }
  }

  /** Ends everything; true for the one caller that did it. */
  private boolean stop() {
    if (!closing.compareAndSet(false, true)) {
      return false;
    }
    Thread c = coordinator;
    if (c != null) {
      c.interrupt();
    }
    sessions.forEach(GroupSession::shutdown);
    long deadline = System.nanoTime() + settings.closeTimeout().toNanos();
    for (GroupSession s : sessions) {
      Thread w = s.worker();
      if (w == null || w == Thread.currentThread()) {
        continue;
      }
      try {
        w.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (w.isAlive()) {
        LOG.error(
            "{} Worker {} did not stop within closeTimeout {} (a refresh ignores its interrupt);"
                + " ending its session anyway",
            settings.context(),
            w.getName(),
            settings.closeTimeout());
        s.abandon();
      }
    }
    Thread wd = watchdog;
    if (wd != null) {
      wd.interrupt();
    }
    return true;
  }

  // ------------------------------------------------------------------ for the sessions

  GroupSettings settings() {
    return settings;
  }

  GroupListeners listeners() {
    return listeners;
  }

  LeaderTask task() {
    return task;
  }

  boolean closing() {
    return closing.get();
  }

  int membershipNamespace() {
    return namespace;
  }

  LockKey groupKey() {
    return groupKey;
  }

  long nextTermNumber(LockKey key) {
    return termNumbers.incrementAndGet(index.get(key));
  }

  void termStarted(KeyTerm t) {
    owned.put(t.key(), t);
    acquisitions.incrementAndGet();
  }

  void termEnded(KeyTerm t) {
    if (owned.remove(t.key(), t)) {
      losses.incrementAndGet();
    }
  }

  void sessionOpened(GroupSession s) {
    Thread c = coordinator;
    if (c != null) {
      // Sessions reopened after a loss (a server restart): contend for the freed keys now rather
      // than at the next membership round, once every session can take its share.
      if (sessions.stream().allMatch(x -> x.live() != null)) {
        roundNow.set(true);
      }
      LockSupport.unpark(c);
    }
  }

  void sessionEnded(GroupSession s) {
    Thread c = coordinator;
    if (c != null) {
      LockSupport.unpark(c);
    }
  }

  void sessionFailed(GroupSession s, AdvisoryLockException e) {
    if (closing()) {
      return;
    }
    if (e instanceof UnsafeSessionException
        && ((UnsafeSessionException) e).reason() == LossReason.POOLER_DETECTED) {
      // A configuration error that retrying cannot fix: every retry would lock on a shared backend.
      Thread stopper = new Thread(() -> fail(e), "retsu-lock-group-" + name() + "-stop");
      stopper.setDaemon(true);
      stopper.start();
      return;
    }
    LOG.warn(
        "{} Session s{} could not be opened, retrying in {}: {}",
        settings.context(),
        s.index,
        settings.reconnectInterval(),
        e.getMessage());
  }

  // ------------------------------------------------------------------ the watchdog

  private void watch() {
    while (!closing() && !Thread.currentThread().isInterrupted()) {
      for (GroupSession s : sessions) {
        s.watch();
      }
      settings.time().park(WATCH_NANOS);
    }
  }

  // ------------------------------------------------------------------ the coordinator

  private void coordinate() {
    long interval = settings.membershipInterval().toNanos();
    while (!closing()) {
      try {
        rebalance();
      } catch (RuntimeException e) {
        LOG.warn("{} Rebalancing failed; trying again next round", settings.context(), e);
      }
      long jitter = (long) (interval * 0.1 * (ThreadLocalRandom.current().nextDouble() * 2 - 1));
      long until = settings.time().nanoTime() + interval + jitter;
      while (!closing() && settings.time().nanoTime() - until < 0) {
        settings.time().park(Math.min(until - settings.time().nanoTime(), WATCH_NANOS * 5));
        if (Thread.interrupted() && closing()) {
          return;
        }
        if (roundNow.getAndSet(false)) {
          break;
        }
      }
    }
  }

  /** One round: read the members, yield the surplus, try keys up to the quota. */
  void rebalance() {
    GroupSession first = sessions.get(0);
    long[] slots = await(first.members());
    long mine = first.membershipSlot();
    if (slots == null || mine < 0) {
      return; // no membership view this round: keep what we hold
    }
    int rank = -1;
    for (int i = 0; i < slots.length; i++) {
      if (slots[i] == mine) {
        rank = i;
      }
    }
    if (rank < 0) {
      return;
    }
    long at = settings.time().nanoTime();
    if (mine != lastSlot) {
      if (lastSlot >= 0) {
        // Our membership session was opened again: the others may still be reconnecting. Wait for
        // them as long as they may take to notice the loss and reconnect, and one round more.
        rejoining = true;
        rejoiningUntil =
            at
                + settings.heartbeatInterval().toNanos()
                + settings.reconnectInterval().toNanos()
                + settings.membershipInterval().toNanos();
      }
      lastSlot = mine;
    }
    if (rejoining && at - rejoiningUntil >= 0) {
      rejoining = false;
    }
    int planned = rebalancer.plannedMembers(slots.length, rejoining);
    members = slots.length;
    if (rebalancer.membership(planned, rank)) {
      LOG.info(
          "{} {} member(s){}; this one is rank {}, quota {} of {} keys",
          settings.context(),
          planned,
          planned != slots.length ? " (" + slots.length + " back after a reconnect)" : "",
          rank,
          rebalancer.quota(),
          settings.keys().size());
    }
    BitSet held = heldSet();
    List<Integer> surplus = rebalancer.surplus(held);
    if (!surplus.isEmpty()) {
      Map<GroupSession, List<LockKey>> bySession = new LinkedHashMap<>();
      for (int k : surplus) {
        KeyTerm t = owned.get(settings.keys().get(k));
        if (t != null) {
          bySession.computeIfAbsent(sessionOf(t), x -> new ArrayList<>()).add(t.key());
        }
      }
      List<CompletableFuture<Integer>> done = new ArrayList<>();
      bySession.forEach((s, keys) -> done.add(s.release(keys, LossReason.CLOSED)));
      for (CompletableFuture<Integer> f : done) {
        Integer n = await(f);
        rebalances.addAndGet(n == null ? 0 : n);
      }
      LOG.info(
          "{} Yielded {} key(s) to rebalance ({} members)",
          settings.context(),
          surplus.size(),
          members);
      return;
    }
    // A sweep of the whole ring after a change, a few hundred keys at rest (see Rebalancer).
    int budget = rebalancer.roundBudget(held.cardinality(), MIN_TRIES_PER_ROUND);
    while (budget > 0 && !closing()) {
      BitSet now = heldSet();
      int missing = rebalancer.quota() - now.cardinality();
      GroupSession target = leastLoaded();
      if (missing <= 0 || target == null) {
        return;
      }
      Rebalancer.Chunk chunk = rebalancer.nextChunk(now, Math.min(budget, settings.batchSize()));
      if (chunk.isEmpty()) {
        return;
      }
      List<LockKey> keys = new ArrayList<>(chunk.size());
      for (int k : chunk.keys()) {
        keys.add(settings.keys().get(k));
      }
      // Spread keys over the sessions: one statement gives the least loaded session at most its
      // even share of the quota (more only while other sessions are down and it is over it).
      int share = (rebalancer.quota() + sessions.size() - 1) / sessions.size();
      int load = target.heldCount();
      int limit = load < share ? Math.min(missing, share - load) : missing;
      List<LockKey> granted = await(target.tryKeys(keys, limit));
      if (granted == null) {
        return;
      }
      List<Integer> positions = new ArrayList<>(granted.size());
      Set<LockKey> got = new java.util.HashSet<>(granted);
      for (int p = 0; p < keys.size(); p++) {
        if (got.contains(keys.get(p))) {
          positions.add(p);
        }
      }
      int tried = Rebalancer.tried(chunk, positions, limit);
      rebalancer.advance(chunk, tried);
      budget -= tried;
    }
  }

  /** The live session with the fewest keys, or null when none is open. */
  private GroupSession leastLoaded() {
    GroupSession best = null;
    int load = Integer.MAX_VALUE;
    for (GroupSession s : sessions) {
      if (s.live() != null && s.heldCount() < load) {
        best = s;
        load = s.heldCount();
      }
    }
    return best;
  }

  private GroupSession sessionOf(KeyTerm t) {
    for (GroupSession s : sessions) {
      if (s.live() == t.live()) {
        return s;
      }
    }
    return sessions.get(0);
  }

  private BitSet heldSet() {
    BitSet held = new BitSet(settings.keys().size());
    for (KeyTerm t : owned.values()) {
      if (!t.ended()) {
        held.set(index.get(t.key()));
      }
    }
    return held;
  }

  /** Waits for a session's answer, bounded; null on timeout or when closing. */
  private <T> T await(CompletableFuture<T> f) {
    long bound = settings.roundTripTimeout().toMillis() * 2 + settings.closeTimeout().toMillis();
    try {
      return f.get(bound, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      if (!closing()) {
        Thread.currentThread().interrupt();
      }
      return null;
    } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
      LOG.debug("{} A session did not answer: {}", settings.context(), e.toString());
      return null;
    }
  }

  /** Test seam: every live session's pid and keys. */
  Map<Integer, Set<LockKey>> sessionsForTests() {
    Map<Integer, Set<LockKey>> out = new LinkedHashMap<>();
    for (GroupSession s : sessions) {
      GroupSession.Live l = s.live();
      if (l != null) {
        out.put(l.pid(), Collections.unmodifiableSet(new java.util.HashSet<>(l.terms.keySet())));
      }
    }
    return out;
  }

  @Override
  public String toString() {
    return "LeaderGroup"
        + settings.context()
        + "{"
        + state.get()
        + ", "
        + heldCount()
        + " of "
        + settings.keys().size()
        + " keys}";
  }
}
