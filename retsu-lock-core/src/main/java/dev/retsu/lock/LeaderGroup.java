package dev.retsu.lock;

import dev.retsu.lock.internal.Lifecycle;
import dev.retsu.lock.internal.group.GroupCore;
import dev.retsu.lock.internal.group.GroupSettings;
import dev.retsu.lock.internal.group.Member;
import dev.retsu.lock.internal.group.Membership;
import dev.retsu.lock.internal.group.SessionSlot;
import dev.retsu.lock.internal.term.TermState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
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
 * LeaderGroup group = LeaderGroup.partitioned(dataSource, "billing", 64).build();
 * group.start(ctx -> { ctx.ensureLeader(); ... ctx.term().key() ... });
 * }</pre>
 *
 * <ul>
 *   <li><b>Sessions.</b> Each member opens {@code sessions} (default {@value #DEFAULT_SESSIONS}, at
 *       most {@value #MAX_SESSIONS}, never more than there are keys) dedicated sessions, never
 *       returned to the data source; each carries the leader's server bounds and a random marker
 *       from the statement that opens it, which refuses a hot standby and a backend already marked
 *       (a transaction-mode pooler); every statement that takes keys re-checks the backend.
 *   <li><b>Work on the lock's own session, per key.</b> The task runs on the session's worker
 *       ({@code retsu-lock-group-<name>-s<i>}), once per key every {@code refreshInterval},
 *       serialised per session; {@link LeaderContext#connection()} is a guarded view of the session
 *       that holds the key and fails with 08003 once that key's term is over.
 *   <li><b>Terms and tokens.</b> Keys are tried in batches ({@code batchSize} per statement) and
 *       one durable fencing token is taken per batch; per key, tokens strictly increase from term
 *       to term. Listeners hear each key's terms ({@link Term#key()}); {@code onAttempt} is not
 *       used.
 *   <li><b>How terms end.</b> A session that ends (terminated, restart, broken) ends exactly its
 *       keys' terms and is opened again after {@code reconnectInterval}; a session with no proof of
 *       life for {@code selfFenceAfter} self-fences every key on it; a key released to rebalance,
 *       or whose refresh failed or timed out, ends alone: work stopped, {@code onLost}, then the
 *       key is unlocked on our session. The end protocol is the one every recipe shares.
 *   <li><b>Ownership.</b> Every {@code heartbeatInterval} each session proves its keys: in O(1)
 *       (same backend, same marker), or with one {@code pg_locks} read once user code used it, and
 *       at once after SQL that may release or reset it. Keys it lost end ({@link
 *       LossReason#LOCK_NOT_HELD}).
 *   <li><b>Fair spread.</b> Each member holds one of {@value #MAX_MEMBERS} membership slots and
 *       every {@code membershipInterval} probes them in one statement, then yields its surplus over
 *       {@code ceil(N / M)} or takes free keys up to it. A leave is pushed to the others at once
 *       and a vanished member is seen by its ring neighbour within {@code memberWatchInterval}, so
 *       its keys are taken within milliseconds. Bounds: docs/leader-group.md.
 * </ul>
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
   * The most members of one group: 256, one membership slot each; reading the membership probes
   * each slot once, so its cost does not grow with the number of locks on the server.
   */
  public static final int MAX_MEMBERS = Membership.SLOTS;

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

  /** Default interval of the watch on the previous member: 25 ms. */
  public static final Duration DEFAULT_MEMBER_WATCH_INTERVAL = Duration.ofMillis(25);

  private static final Logger LOG = LoggerFactory.getLogger(LeaderGroup.class);

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
  private final GroupCore core;
  private final Lifecycle lifecycle = new Lifecycle();
  private final Member member;
  private final List<LeaderWatch.Registration> watching = new ArrayList<>();

  LeaderGroup(GroupSettings settings) {
    this.settings = settings;
    this.core = new GroupCore(settings);
    this.member = new Member(core, lifecycle);
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

  /** {@return the group's name} */
  public String name() {
    return settings.name();
  }

  /** {@return this member's id} */
  public String candidateId() {
    return settings.term().candidateId();
  }

  /** {@return the group's keys, in the order every member shares} */
  public List<LockKey> keys() {
    return settings.keys();
  }

  /** {@return the lifecycle state} */
  public State state() {
    return State.valueOf(lifecycle.phase().name());
  }

  /** {@return what stopped the group, once it is {@link State#FAILED}} */
  public Optional<Throwable> failure() {
    return lifecycle.failure();
  }

  /**
   * Returns the keys this member leads right now: terms announced ({@code onAcquired} delivered)
   * that have not ended.
   *
   * @return a snapshot, in the group's key order
   */
  public List<LockKey> heldKeys() {
    List<LockKey> out = new ArrayList<>();
    for (Map.Entry<LockKey, TermState> e : core.owned().entrySet()) {
      if (e.getValue().isHeld()) {
        out.add(e.getKey());
      }
    }
    out.sort(Comparator.comparingInt(core::indexOf));
    return out;
  }

  /** {@return how many keys this member leads right now} */
  public int heldCount() {
    int n = 0;
    for (TermState t : core.owned().values()) {
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
    TermState t = core.owned().get(key);
    return t == null || !t.isHeld() ? Optional.empty() : Optional.of(t.term());
  }

  /**
   * Returns this member's term of a key as a {@link LeaderInfo}, while it leads the key: the
   * session's pid and database, the term's start, number and token, the start of the last round
   * trip that proved the session alive and the self-fencing deadline. No I/O. Who leads the keys
   * other members hold: a {@link LeaderWatch} on the group's keys, or {@link LeaderInfo#of}.
   *
   * @param key one of the group's keys
   * @return the info, or empty
   */
  public Optional<LeaderInfo> leaderInfo(LockKey key) {
    TermState t = core.owned().get(key);
    return t == null || !t.isHeld()
        ? Optional.empty()
        : Optional.of(LeaderInfo.ofTerm(t.term(), t.session()));
  }

  /**
   * Hands one key over: its term ends in the graceful order (its refresh interrupted and awaited,
   * {@code onLost} with {@link LossReason#YIELDED}, a {@code released} notice, then the key is
   * unlocked on its session, which stays open for the other keys), and this member does not take it
   * again for {@code cooldown}; another member takes it at its next round, within milliseconds when
   * it is below its share. Returns once the key is released.
   *
   * @param key one of the group's keys
   * @param cooldown how long not to take it again: zero or positive
   * @return true if this member led the key and released it
   */
  public boolean yield(LockKey key, Duration cooldown) {
    Objects.requireNonNull(key, "key");
    dev.retsu.lock.internal.Checks.nonNegative("cooldown", cooldown);
    if (!core.hasKey(key)) {
      throw new IllegalArgumentException("key must be one of the group's keys, but was " + key);
    }
    return member.yieldKey(key, cooldown.toNanos());
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

  /** {@return how many sessions this member has open right now} */
  public int openSessions() {
    int n = 0;
    for (SessionSlot s : member.slots()) {
      if (s.worker() != null) {
        n++;
      }
    }
    return n;
  }

  /** {@return the number of members this member saw at its last membership read} */
  public int members() {
    return member.members();
  }

  /**
   * Returns this member's fair share at its last membership read, ceil(keys / members): with {@link
   * #heldCount()} it says whether the group is balanced (a member above it yields the surplus at
   * its next round, one below takes free keys), and a {@link LeaderWatch} on the keys shows each
   * move as it happens.
   *
   * @return the share; all keys before the first read
   */
  public int fairShare() {
    return dev.retsu.lock.internal.group.Rebalancer.quota(
        settings.keys().size(), Math.max(1, member.members()));
  }

  /**
   * Returns how many keys this member has yielded to rebalance the group (graceful releases because
   * it held more than its fair share).
   *
   * @return the count since start
   */
  public long rebalances() {
    return core.rebalances();
  }

  /** {@return how many key terms this member has started} */
  public long acquisitions() {
    return core.acquisitions();
  }

  /** {@return how many key terms of this member have ended} */
  public long losses() {
    return core.losses();
  }

  /**
   * Adds a listener to a group that may already run; it hears what happens from now on.
   *
   * @param listener the listener
   */
  public void addListener(LeaderListener listener) {
    core.listeners().add(listener);
  }

  /**
   * Removes a listener.
   *
   * @param listener the listener
   * @return true if it was registered
   */
  public boolean removeListener(LeaderListener listener) {
    return core.listeners().remove(listener);
  }

  /**
   * Starts the group: opens the sessions (each on its worker thread), then contends for keys. It
   * returns once the first session is open, or throws if it could not be: a database that cannot be
   * reached, a hot standby or a transaction-mode pooler fails fast here. A group built with {@code
   * failFast(false)} returns instead and its sessions keep trying (a transaction pooler still stops
   * it). Keep the returned future, as with {@link LeaderLoop#start}.
   *
   * @param task the work for one key, run on the session that holds it every {@code
   *     refreshInterval}; {@link LeaderContext#term()} says which key
   * @return completes once the group is closed (after every session ended), exceptionally with the
   *     cause when it fails later ({@link State#FAILED}: a transaction pooler found by a reconnect)
   * @throws AdvisoryLockException when the first session could not be opened (the group is then
   *     {@link State#FAILED})
   * @throws IllegalStateException if the group was started or closed already
   */
  public CompletableFuture<Void> start(LeaderTask task) {
    Objects.requireNonNull(task, "task");
    lifecycle.start("A LeaderGroup starts once", settings.context());
    LeaderWatch watch = settings.term().watch();
    if (watch != null) {
      for (LockKey k : settings.keys()) {
        watching.add(watch.watch(k, core.listeners()::leaderChanged));
      }
    }
    member.start(task);
    return lifecycle.ended();
  }

  /**
   * Stops the group: every key's term turns invalid, running refreshes are interrupted and awaited
   * (up to {@code closeTimeout}), listeners hear {@code onLost} per key, then every session is
   * ended (which releases its keys and the membership slot). Idempotent; never throws.
   */
  @Override
  public void close() {
    if (lifecycle.phase() == Lifecycle.Phase.NEW) {
      lifecycle.close();
    }
    watching.forEach(LeaderWatch.Registration::close);
    if (member.stop()) {
      lifecycle.close();
      LOG.info("{} Leader group closed", settings.context());
    }
  }

  /** Test seam: the first part of the membership slots' keys. */
  int membershipNamespace() {
    return core.membership().groupKey().first();
  }

  @Override
  public String toString() {
    return "LeaderGroup"
        + settings.context()
        + "{"
        + state()
        + ", "
        + heldCount()
        + " of "
        + settings.keys().size()
        + " keys}";
  }
}
