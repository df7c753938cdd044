package dev.retsu.lock.quarkus;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.quarkus.internal.TermGate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One named group ({@code retsu.lock.groups.<name>}): a {@link LeaderGroup} started when the
 * application starts and closed when it stops, with a leader-only gate per key (what a {@link
 * LeaderOnly} method with a key runs through). Get it from {@link RetsuLeaders}. Thread-safe; which
 * keys it owns may change behind the caller's back.
 */
public final class RetsuLeaderGroup {

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaderGroup.class);

  private final String name;
  private final LeaderGroup group;
  private final Map<String, LockKey> keys;
  private final Map<LockKey, TermGate> gates = new LinkedHashMap<>();
  private volatile boolean started;
  private final Consumer<Object> events;
  private volatile Throwable startFailure;

  RetsuLeaderGroup(
      String name,
      LeaderGroup group,
      Map<String, LockKey> keys,
      Duration closeTimeout,
      Consumer<Object> events) {
    this.name = name;
    this.events = events;
    this.group = group;
    this.keys = Collections.unmodifiableMap(new LinkedHashMap<>(keys));
    for (Map.Entry<String, LockKey> e : keys.entrySet()) {
      gates.put(
          e.getValue(), new TermGate("[group=" + name + ", key=" + e.getKey() + "]", closeTimeout));
    }
    group.addListener(new Hooks());
  }

  /**
   * Returns the group's name.
   *
   * @return the name under {@code retsu.lock.groups}
   */
  public String name() {
    return name;
  }

  /**
   * Returns the core group.
   *
   * @return the group
   */
  public LeaderGroup group() {
    return group;
  }

  /**
   * Returns whether this member owns a key now: a local hint without I/O.
   *
   * @param key the key's name, one of the group's {@code keys}
   * @return true while a term of that key is on here
   * @throws IllegalArgumentException if the group has no such key
   */
  public boolean owns(String key) {
    return group.currentTerm(lockKey(key)).isPresent();
  }

  /**
   * Returns the names of the keys this member owns now, in the configured order.
   *
   * @return the names
   */
  public List<String> ownedKeys() {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, LockKey> e : keys.entrySet()) {
      if (group.currentTerm(e.getValue()).isPresent()) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  /**
   * Returns the context of a key's term while the calling thread runs that key's leader-only work:
   * its connection is the session that holds the key.
   *
   * @param key the key's name
   * @return the context
   * @throws IllegalStateException outside that key's leader-only work
   */
  public LeaderContext context(String key) {
    LeaderContext ctx = gates.get(lockKey(key)).current();
    if (ctx == null) {
      throw new IllegalStateException(
          "[group="
              + name
              + ", key="
              + key
              + "] context() is only available inside this key's @LeaderOnly work or runIfOwner,"
              + " but the calling thread "
              + Thread.currentThread().getName()
              + " runs none");
    }
    return ctx;
  }

  /**
   * Runs the work if this member owns the key, on that key's term, bound to the calling thread.
   * Every end of that term interrupts the work and awaits it (up to {@code close-timeout}) before
   * the key is released.
   *
   * @param key the key's name
   * @param work the work
   * @return whether it ran
   * @throws Exception what the work threw
   */
  public boolean runIfOwner(String key, LeaderWork work) throws Exception {
    return gates.get(lockKey(key)).run(work);
  }

  /**
   * Returns whether the group failed for good (it will never own a key again in this process).
   *
   * @return true once failed
   */
  public boolean failed() {
    return startFailure != null || group.state() == LeaderGroup.State.FAILED;
  }

  /**
   * Returns whether the group was started and has been closed since.
   *
   * @return true once stopped
   */
  public boolean stopped() {
    return started && group.state() == LeaderGroup.State.CLOSED;
  }

  /**
   * Returns the details health shows: {@code role} ({@code member}, {@code starting}, {@code
   * stopped}, {@code failed}), {@code candidate}, {@code keys}, {@code owned}, and the error of a
   * failed group. A member that owns no key is a healthy standby.
   *
   * @return the details, a new map
   */
  public Map<String, Object> details() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("role", failed() ? "failed" : stopped() ? "stopped" : started ? "member" : "starting");
    d.put("candidate", group.candidateId());
    d.put("keys", keys.size());
    d.put("owned", ownedKeys());
    d.put("members", group.members());
    Throwable f = startFailure != null ? startFailure : group.failure().orElse(null);
    if (f != null) {
      d.put("error", f.getClass().getName() + ": " + RetsuLeader.message(f));
    }
    return d;
  }

  void start() {
    started = true;
    try {
      group.start(ctx -> gates.get(ctx.term().key()).bind(ctx));
    } catch (RuntimeException e) {
      startFailure = e;
      LOG.error("[group={}] Failed for good at start; health is DOWN", name, e);
    }
  }

  void close() {
    group.close();
  }

  private LockKey lockKey(String key) {
    LockKey k = keys.get(key);
    if (k == null) {
      throw new IllegalArgumentException(
          "Group '"
              + name
              + "' has no key '"
              + key
              + "'; retsu.lock.groups."
              + name
              + ".keys has "
              + keys.keySet());
    }
    return k;
  }

  @Override
  public String toString() {
    return "RetsuLeaderGroup[" + name + ", " + details().get("role") + "]";
  }

  /**
   * Each key's gate opens on its term and closes, awaiting its work, before its release; each is
   * told as a leadership event naming the group, with the key in the term.
   */
  private final class Hooks implements LeaderListener {

    @Override
    public void onAcquired(Term term) {
      TermGate g = gates.get(term.key());
      if (g != null) {
        g.begin(term);
        events.accept(new LeadershipGranted(name, term));
      }
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      TermGate g = gates.get(term.key());
      if (g != null) {
        g.end(term, reason);
        events.accept(new LeadershipRevoked(name, term, reason));
      }
    }
  }
}
