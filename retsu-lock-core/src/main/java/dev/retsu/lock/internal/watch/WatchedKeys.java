package dev.retsu.lock.internal.watch;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderChangeListener;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.PgSession;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys a {@link Watcher} serves and the rules by which a leader change reaches their listeners:
 * per key the leader last delivered and the highest token ever delivered, so that changes go out in
 * token order and never twice, whatever source (an {@code acquired} or {@code released} notice, a
 * {@code pg_locks} read, a {@code pg_stat_activity} check) reports them. It runs no statement; the
 * watcher reads the database and hands the answers here. Confined to the watcher's thread, except
 * {@link #leader}, which any thread may call.
 */
final class WatchedKeys {

  /** The watcher's logger: these lines are the watch's, as they always were. */
  private static final Logger LOG = LoggerFactory.getLogger(Watcher.class);

  private final String context;
  private final TimeSource time;
  private final Map<LockKey, KeyState> keys = new HashMap<>();
  private final Map<String, KeyState> byId = new HashMap<>();
  private final Map<LockKey, Optional<LeaderInfo>> view = new ConcurrentHashMap<>();
  private final Set<LockKey> pendingReads = new HashSet<>();

  /** Keys a notice asked to read again, with the notice's cause. */
  private final Map<LockKey, LeaderChange.Cause> hints = new HashMap<>();

  /**
   * How long a candidate's holder that shows no token yet is held back: a POLL or group grant takes
   * the key in one statement and the token in the next, and a read between them would otherwise
   * deliver the term twice (first without its token). The token's {@code acquired} notice asks for
   * the read that delivers it; a holder that never takes a token (a plain lease) goes out when this
   * has passed.
   */
  static final long TOKENLESS_GRACE_NANOS = 1_000_000_000L;

  /** Keys whose holder showed no token yet: when the grace ends (nanoTime). */
  private final Map<LockKey, Long> tokenless = new HashMap<>();

  /** One watched key: its listeners, what was delivered. */
  private static final class KeyState {
    final LockKey key;
    final List<LeaderChangeListener> listeners = new CopyOnWriteArrayList<>();
    Optional<LeaderInfo> current = Optional.empty();
    boolean known;
    FencingToken highest;

    KeyState(LockKey key) {
      this.key = key;
    }
  }

  /**
   * @param context the watch's log prefix
   * @param time the clock of every change's timestamp
   */
  WatchedKeys(String context, TimeSource time) {
    this.context = context;
    this.time = time;
  }

  /** What was last delivered for a key (empty: nobody, or not known yet). Any thread. */
  Optional<LeaderInfo> leader(LockKey key) {
    return view.getOrDefault(key, Optional.empty());
  }

  /** Adds a listener: it hears the key's leader now if known, else after the key's first read. */
  void add(LockKey key, LeaderChangeListener l) {
    KeyState k = keys.get(key);
    if (k == null) {
      k = new KeyState(key);
      keys.put(key, k);
      byId.put(Notices.keyId(key), k);
    }
    k.listeners.add(l);
    if (k.known) {
      tell(l, new LeaderChange(key, k.current, LeaderChange.Cause.READ, now()));
    } else {
      pendingReads.add(key);
    }
  }

  /** Removes a listener; a key with none left is forgotten. */
  void remove(LockKey key, LeaderChangeListener l) {
    KeyState k = keys.get(key);
    if (k != null) {
      k.listeners.remove(l);
      if (k.listeners.isEmpty()) {
        keys.remove(key);
        byId.remove(Notices.keyId(key));
        view.remove(key);
        pendingReads.remove(key);
        hints.remove(key);
        tokenless.remove(key);
      }
    }
  }

  /** Every key is to be read again (the session was opened again: changes may have been missed). */
  void readAllAgain() {
    pendingReads.addAll(keys.keySet());
  }

  /**
   * The keys waiting for their read, now no longer waiting (among them those whose tokenless holder
   * was held back long enough); empty when none.
   */
  List<LockKey> takePendingReads() {
    if (!tokenless.isEmpty()) {
      long now = time.nanoTime();
      tokenless.forEach(
          (key, until) -> {
            if (now - until >= 0) {
              pendingReads.add(key);
            }
          });
    }
    List<LockKey> read = new ArrayList<>(pendingReads);
    pendingReads.clear();
    return read;
  }

  /** Every watched key. */
  List<LockKey> all() {
    return new ArrayList<>(keys.keySet());
  }

  /** Applies one {@code pg_locks} read of these keys: a token older than one delivered is stale. */
  void read(List<LockKey> read, Map<LockKey, LeaderInfo> found) {
    for (LockKey key : read) {
      KeyState k = keys.get(key);
      if (k == null) {
        continue;
      }
      LeaderInfo info = found.get(key);
      Optional<LeaderInfo> now = Optional.ofNullable(info);
      boolean older =
          info != null
              && info.token().isPresent()
              && k.highest != null
              && info.token().get().compareTo(k.highest) < 0;
      LeaderChange.Cause hint = hints.remove(key);
      if (heldBack(key, info)) {
        if (hint != null) {
          hints.put(key, hint);
        }
        continue;
      }
      if (!older && (!k.known || !same(k.current, now))) {
        LeaderChange.Cause cause = cause(hint, now);
        deliver(k, cause == LeaderChange.Cause.ACQUIRED ? now.map(this::seenNow) : now, cause);
      }
      k.known = true;
    }
  }

  /**
   * Whether a read's holder is a candidate's grant whose token is not shown yet, within its grace:
   * it is not delivered now (the read that shows the token, or the grace's end, delivers it).
   */
  private boolean heldBack(LockKey key, LeaderInfo info) {
    if (info == null || info.foreign() || info.token().isPresent()) {
      tokenless.remove(key);
      return false;
    }
    long now = time.nanoTime();
    Long until = tokenless.putIfAbsent(key, now + TOKENLESS_GRACE_NANOS);
    if (until != null && now - until >= 0) {
      tokenless.remove(key);
      return false;
    }
    return true;
  }

  /** A new term a notice announced and a read confirmed: {@code acquiredAt} is when it was seen. */
  private LeaderInfo seenNow(LeaderInfo info) {
    return new LeaderInfo(
        info.key(),
        info.candidateId(),
        info.pid(),
        info.database(),
        info.token(),
        info.term(),
        Optional.of(now()),
        info.lastRenewal(),
        info.validUntil(),
        info.foreign());
  }

  /** The cause of a change a read found: the notice's that asked for it, when it fits. */
  private static LeaderChange.Cause cause(LeaderChange.Cause hint, Optional<LeaderInfo> now) {
    if (hint == LeaderChange.Cause.ACQUIRED && now.isPresent()) {
      return LeaderChange.Cause.ACQUIRED;
    }
    if (hint == LeaderChange.Cause.RELEASED && now.isEmpty()) {
      return LeaderChange.Cause.RELEASED;
    }
    return LeaderChange.Cause.READ;
  }

  private static boolean same(Optional<LeaderInfo> a, Optional<LeaderInfo> b) {
    if (a.isEmpty() || b.isEmpty()) {
      return a.isEmpty() && b.isEmpty();
    }
    return a.get().pid() == b.get().pid() && a.get().token().equals(b.get().token());
  }

  /**
   * Applies notifications, which any role can send (DESIGN invariant 9), so none is taken for a
   * fact it cannot prove. The server attaches the sender's backend pid to each: a notice that names
   * another pid is ignored. A {@code released} sent by the current leader's own session (a pid a
   * {@code pg_locks} read showed holding the key, as a candidate) for its own token is that session
   * saying it lets go: nobody, at once. Any other notice about a watched key (an {@code acquired},
   * or a {@code released} of someone else) is a hint: the key is read again from {@code pg_locks},
   * and what the read shows is delivered, under the notice's cause. Reads are coalesced per key.
   */
  void notices(List<PgSession.Note> notes) {
    for (PgSession.Note n : notes) {
      if (!Notices.CHANNEL.equals(n.channel())) {
        continue;
      }
      Notices.Notice notice = Notices.parse(n.payload()).orElse(null);
      KeyState k = notice == null ? null : byId.get(notice.keyId());
      if (k == null || notice.pid() != n.pid()) {
        continue;
      }
      if (notice.kind() == Notices.Kind.RELEASED
          && k.current.isPresent()
          && k.current.get().pid() == n.pid()
          && k.current.get().token().equals(Optional.of(notice.token()))) {
        deliver(k, Optional.empty(), LeaderChange.Cause.RELEASED);
        hints.remove(k.key);
        continue;
      }
      if (k.highest != null
          && notice.kind() == Notices.Kind.ACQUIRED
          && notice.token().compareTo(k.highest) <= 0) {
        continue; // not newer than a term already delivered from a read
      }
      hints.put(
          k.key,
          notice.kind() == Notices.Kind.ACQUIRED
              ? LeaderChange.Cause.ACQUIRED
              : LeaderChange.Cause.RELEASED);
      pendingReads.add(k.key);
    }
  }

  /** The backend pids of the current leaders, for one {@code pg_stat_activity} read. */
  Set<Integer> leaderPids() {
    Set<Integer> pids = new HashSet<>();
    for (KeyState k : keys.values()) {
      k.current.ifPresent(i -> pids.add(i.pid()));
    }
    return pids;
  }

  /**
   * Applies one {@code pg_stat_activity} read of {@code pids}: a leader whose session is gone, or
   * lives on under an older token, ended without a notice.
   *
   * @param alive pid to {@code application_name} of the sessions still there
   */
  void check(Set<Integer> pids, Map<Integer, String> alive) {
    for (KeyState k : new ArrayList<>(keys.values())) {
      if (k.current.isEmpty() || !pids.contains(k.current.get().pid())) {
        continue;
      }
      LeaderInfo info = k.current.get();
      String name = alive.get(info.pid());
      if (name == null || !stillHolds(info, name)) {
        deliver(k, Optional.empty(), LeaderChange.Cause.ENDED);
      }
    }
  }

  /** Whether a live session with this name may still hold the term: same token or newer. */
  private static boolean stillHolds(LeaderInfo info, String applicationName) {
    if (info.token().isEmpty()) {
      return true; // a holder without a token: its session alive is all that can be known here
    }
    Optional<FencingToken> now = Notices.parseName(applicationName).flatMap(Notices.Name::token);
    return now.isPresent() && now.get().compareTo(info.token().get()) >= 0;
  }

  private void deliver(KeyState k, Optional<LeaderInfo> leader, LeaderChange.Cause cause) {
    k.current = leader;
    k.known = true;
    leader
        .flatMap(LeaderInfo::token)
        .ifPresent(
            t -> {
              if (k.highest == null || t.compareTo(k.highest) > 0) {
                k.highest = t;
              }
            });
    view.put(k.key, leader);
    LeaderChange change = new LeaderChange(k.key, leader, cause, now());
    for (LeaderChangeListener l : k.listeners) {
      tell(l, change);
    }
  }

  private void tell(LeaderChangeListener l, LeaderChange change) {
    try {
      l.onLeaderChanged(change);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("{} Listener {}.onLeaderChanged threw; ignored", context, l.getClass().getName(), e);
    }
  }

  private Instant now() {
    return Instant.ofEpochMilli(time.wallMillis());
  }
}
