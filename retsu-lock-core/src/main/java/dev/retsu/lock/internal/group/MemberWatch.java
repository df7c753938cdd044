package dev.retsu.lock.internal.group;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.internal.session.Notices;
import dev.retsu.lock.internal.session.PgSession;
import dev.retsu.lock.internal.session.Session;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.term.Wakeup;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A group member's push path ({@code retsu-lock-group-<name>-watch}, daemon): a session of its own
 * that listens on the group's channel and, every {@code memberWatchInterval}, looks whether the
 * member before this one (in membership-slot order, round the ring) still holds its slot: one
 * shared-mode try that is given back at once, so no statement waits and no snapshot is held between
 * looks. A member that leaves notifies the channel once its keys are released ({@code left}); one
 * that joins notifies it too ({@code joined}); a member that finds the one before it gone (a crash
 * sends nothing) notifies the others ({@code gone}). Each notice, and each departure seen, starts a
 * round of the coordinator at once, so the keys of a member that left or crashed are taken over in
 * milliseconds instead of at the next membership read. Each member watches one other, so the group
 * holds one watch session per member, not one per pair.
 *
 * <p>Any role that can connect can notify the channel (its name follows from {@code pg_locks}), so
 * a notice is a hint, believed only from a member session ({@link Membership#memberSessions}: a
 * membership slot or the watchers key held, the candidates' role), by the pid PostgreSQL attaches
 * to it ({@link NoticeSenders}). A {@code yielded} notice sets a hand-off window of at most {@link
 * #MAX_HAND_OFF}, and none for a key this member holds or held until less than a {@code
 * membershipInterval} ago. Thread-safe.
 */
final class MemberWatch implements Runnable {

  private static final Logger LOG = LoggerFactory.getLogger(MemberWatch.class);

  /**
   * The longest hand-off window a {@code yielded} notice sets, whatever cooldown it names: 5
   * minutes. A member that yields with a longer cooldown is covered for this long; after it, a
   * member above its share may yield the key again.
   */
  static final Duration MAX_HAND_OFF = Duration.ofMinutes(5);

  private final GroupCore core;
  private final SessionOpener.Spec spec;
  private final Runnable roundNow;
  private final String channel;
  private final int intervalMillis;
  private final Wakeup wakeup;
  private volatile Session session;
  private volatile Thread thread;
  private volatile int own = -1;
  private volatile int previous = -1;
  private volatile String pending;
  private final java.util.concurrent.ConcurrentLinkedQueue<String> notices =
      new java.util.concurrent.ConcurrentLinkedQueue<>();
  private final NoticeSenders senders;
  private long[] lastSlots;

  MemberWatch(GroupCore core, int namespace, Runnable roundNow) {
    this.core = core;
    this.roundNow = roundNow;
    SessionOpener.Spec g = core.settings().spec();
    this.spec =
        new SessionOpener.Spec(
            g.dataSource(),
            g.key(),
            g.candidateId(),
            "[group=" + core.settings().name() + ", candidate=" + g.candidateId() + ", watch]",
            applicationName(g.candidateId()),
            g.settings(),
            g.roundTripTimeout(),
            g.heartbeat(),
            g.selfFenceAfter(),
            g.time());
    this.channel = channelOf(namespace);
    this.intervalMillis = (int) Math.max(1, core.settings().memberWatchInterval().toMillis());
    this.wakeup = new Wakeup(g.time(), core::closing);
    this.senders = new NoticeSenders(g.time()::nanoTime, spec.context(), this::believe);
  }

  private static String applicationName(String candidateId) {
    String name = LeaderWatch.APPLICATION_NAME_PREFIX + candidateId;
    return name.length() > 63 ? name.substring(0, 63) : name; // PostgreSQL keeps 63 bytes
  }

  /** The channel of the group with membership namespace {@code namespace}: 25 chars. */
  static String channelOf(int namespace) {
    return "retsu_lock_group_" + HexFormat.of().toHexDigits(namespace); // an identifier
  }

  /** The channel the group's members notify. */
  String channel() {
    return channel;
  }

  void start() {
    Thread t = new Thread(this, "retsu-lock-group-" + core.settings().name() + "-watch");
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /**
   * What the last membership read saw: this member's slot and the others', ascending. The member to
   * watch is the one before this one, round the ring; a new slot of this member is announced.
   */
  void membership(long[] slots, int mine) {
    if (lastSlots != null && !java.util.Arrays.equals(lastSlots, slots)) {
      senders.markStale(); // a member came or went: the member sessions are read again
    }
    lastSlots = slots;
    int gone = vanished(slots, previous);
    previous = previous(slots, mine);
    if (gone >= 0) {
      // This read saw the watched member gone before the watch did: tell the others all the same,
      // or they learn of it only at their own next membership read.
      LOG.debug("{} The member at slot {} is gone (membership read)", spec.context(), gone);
      notices.add(Notices.gone(gone));
      wakeup.wakeAll();
    }
    if (mine != own) {
      own = mine;
      pending = Notices.joined(mine);
    }
  }

  /**
   * The member to watch: the highest slot below {@code mine}, or round the ring the highest of all;
   * -1 when this member is alone.
   *
   * @param slots the members' slots, ascending
   * @param mine this member's slot
   * @return the slot to watch, or -1
   */
  static int previous(long[] slots, int mine) {
    int before = -1;
    for (long s : slots) {
      if (s < mine) {
        before = (int) s;
      }
    }
    if (before < 0 && slots.length > 0) {
      before = (int) slots[slots.length - 1]; // round the ring: the highest slot
    }
    return before == mine ? -1 : before;
  }

  /**
   * The watched slot if a membership read no longer lists it (its member left or crashed), else -1.
   *
   * @param slots the members' slots, ascending
   * @param watched the slot being watched, or -1
   * @return {@code watched} when it is gone, else -1
   */
  static int vanished(long[] slots, int watched) {
    if (watched < 0) {
      return -1;
    }
    for (long s : slots) {
      if (s == watched) {
        return -1;
      }
    }
    return watched;
  }

  /**
   * Tells the others this member yielded the key at {@code index} and does not take it for {@code
   * cooldownMillis}: they take it even above their quota meanwhile.
   */
  void yielded(int index, long cooldownMillis) {
    notices.add(Notices.yielded(index, cooldownMillis));
    wakeup.wakeAll();
  }

  /**
   * Tells the others this member left, once its keys are released, then ends the watch session.
   * From the stopping thread; never throws.
   */
  void leave() {
    Session s = session;
    int slot = own;
    if (s != null && slot >= 0 && s.isOpen()) {
      try {
        s.call(c -> notify(c, Notices.left(slot)));
      } catch (SQLException | RuntimeException e) {
        LOG.debug("{} Could not tell the group this member left: {}", spec.context(), e.toString());
      }
    }
    stop();
  }

  void stop() {
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
    Session s = session;
    if (s != null) {
      s.end();
    }
  }

  @Override
  public void run() {
    while (!core.closing()) {
      Session s;
      try {
        s = SessionOpener.open(spec);
      } catch (AdvisoryLockException e) {
        LOG.debug("{} Opening the watch session failed: {}", spec.context(), e.getMessage());
        wakeup.await(core.settings().reconnectInterval().toNanos(), () -> false);
        continue;
      }
      session = s;
      try {
        s.call(this::listen);
        watch(s);
      } catch (SQLException e) {
        if (!core.closing()) {
          LOG.debug("{} The watch session failed: {}", spec.context(), e.toString());
        }
      } finally {
        if (!core.closing() || !s.isOpen()) {
          s.end();
          session = null;
        }
        // else: the group is closing; leave() tells the others on this session once the keys are
        // released, then ends it. Ending it here first would lose the left notice.
      }
      if (!core.closing()) {
        wakeup.await(core.settings().reconnectInterval().toNanos(), () -> false);
      }
    }
  }

  private Void listen(java.sql.Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("LISTEN " + channel);
    }
    return null;
  }

  /**
   * Marks this session as the member's watch session (the watchers key, shared), so the others
   * believe its notices; true once it holds the key. Refused only while a session holds or queues
   * for that key in exclusive mode, which no member does: this member's notices are then ignored by
   * the others, and they see its changes at their membership reads.
   */
  private boolean mark(Session s, boolean warned) throws SQLException {
    boolean held = s.call(c -> core.membership().markWatcher(c));
    if (!held && !warned) {
      LOG.warn(
          "{} Another session holds or waits for the group's watchers key (ns {}, {}) in exclusive"
              + " mode, so the other members ignore this member's notices; they see its changes at"
              + " their membership reads",
          spec.context(),
          core.membership().namespace(),
          Membership.SLOTS);
    }
    return held;
  }

  private void watch(Session s) throws SQLException {
    int own = s.id().pid();
    boolean marked = mark(s, false);
    long markedTriedAt = core.settings().term().time().nanoTime();
    senders.reset();
    while (!core.closing() && s.isOpen()) {
      long now = core.settings().term().time().nanoTime();
      if (!marked && now - markedTriedAt >= core.settings().membershipInterval().toNanos()) {
        marked = mark(s, true);
        markedTriedAt = now;
        if (marked) {
          LOG.info("{} Holds the group's watchers key now: its notices count", spec.context());
        }
      }
      PGNotification[] notes = s.call(c -> PgSession.await(c, intervalMillis));
      if (notes == null) {
        wakeup.await(intervalMillis * 1_000_000L, () -> false); // no pgjdbc: looks only
      } else {
        boolean round = false;
        for (PGNotification n : notes) {
          round |= senders.heard(n.getPID(), n.getParameter(), own);
        }
        round |= senders.look(() -> s.call(c -> core.membership().memberSessions(c)));
        if (round) {
          roundNow.run();
        }
      }
      String notice;
      while ((notice = notices.poll()) != null) {
        String text = notice;
        s.call(c -> notify(c, text));
      }
      String announce = pending;
      if (announce != null) {
        pending = null;
        s.call(c -> notify(c, announce));
      }
      int before = previous;
      if (before >= 0 && s.call(c -> core.membership().isFree(c, before))) {
        previous = -1;
        LOG.debug("{} The member at slot {} is gone", spec.context(), before);
        roundNow.run(); // first: this member's round need not wait for the notice's round trip
        s.call(c -> notify(c, Notices.gone(before)));
      }
    }
  }

  /** A notice of a member session: a hint to look now, and a {@code yielded} sets a window. */
  private void believe(String notice) {
    LOG.debug("{} Notice from the group: {}", spec.context(), notice);
    Notices.HandOff h = handOff(notice, core.settings().keys().size());
    long now = core.settings().term().time().nanoTime();
    if (h != null && !core.handOff(h.index(), now, now + h.millis() * 1_000_000L)) {
      LOG.debug("{} Ignored {}: this member holds or just held that key", spec.context(), notice);
    }
  }

  /**
   * The hand-off window a {@code yielded} notice asks for ({@link Notices#handOff}), at most {@link
   * #MAX_HAND_OFF}; null when it asks for none.
   *
   * @param notice the payload
   * @param keys the group's key count
   * @return the window, or null
   */
  static Notices.HandOff handOff(String notice, int keys) {
    return Notices.handOff(notice, keys, MAX_HAND_OFF.toMillis());
  }

  private Void notify(java.sql.Connection c, String what) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_catalog.pg_notify(?, ?)")) {
      ps.setString(1, channel);
      ps.setString(2, what);
      ps.execute();
    }
    return null;
  }
}
