package dev.retsu.lock.internal.group;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which notices on a group's channel to believe (DESIGN invariant 9: a notice is a hint). Any role
 * that can connect can notify the channel; PostgreSQL attaches the notifying backend's pid to each
 * notification, and a notice counts only when that pid is this member's own watch session or one of
 * the group's member sessions. A pid not known yet is looked up at most once per {@link
 * #SENDER_READ_GAP} (its notices wait for that look, a bounded number per pid and a bounded number
 * of pids); a notice from any other pid is ignored and counted, logged at DEBUG at most once per
 * {@link #IGNORED_LOG_GAP}.
 *
 * <p>Used by the watch thread alone, except {@link #markStale()} (from the coordinator's thread)
 * and {@link #ignored()} (any thread).
 */
final class NoticeSenders {

  private static final Logger LOG = LoggerFactory.getLogger(NoticeSenders.class);

  /** The least time between two reads of the member sessions on behalf of unknown pids: 250 ms. */
  static final Duration SENDER_READ_GAP = Duration.ofMillis(250);

  /** The least time between two DEBUG lines about ignored notices: 10 seconds. */
  static final Duration IGNORED_LOG_GAP = Duration.ofSeconds(10);

  /** Unknown pids whose notices wait for the next read of the member sessions, at most. */
  static final int MAX_UNKNOWN_SENDERS = 64;

  /** Notices kept per unknown pid until that read, at most. */
  static final int MAX_NOTICES_PER_SENDER = 16;

  /** Reads which backend pids are member sessions now (one statement). */
  interface MemberSessions {
    Set<Integer> read() throws SQLException;
  }

  private final LongSupplier nanoTime;
  private final String context;
  private final Consumer<String> believe;
  private Set<Integer> members = Set.of();
  private final Map<Integer, List<String>> unknown = new LinkedHashMap<>();
  private long readAt;
  private boolean read;
  private volatile boolean stale;
  private final AtomicLong ignored = new AtomicLong();
  private long ignoredLogged;
  private long ignoredLoggedAt;
  private boolean ignoredLoggedOnce;

  /**
   * @param nanoTime the monotonic clock
   * @param context the log prefix
   * @param believe what a believed notice does
   */
  NoticeSenders(LongSupplier nanoTime, String context, Consumer<String> believe) {
    this.nanoTime = nanoTime;
    this.context = context;
    this.believe = believe;
  }

  /** A new watch session: nothing is known about the senders yet. */
  void reset() {
    members = Set.of();
    read = false;
    unknown.clear();
  }

  /**
   * A membership read saw a member come or go: the member sessions are read again at the next look.
   */
  void markStale() {
    stale = true;
  }

  /** Notices from pids that are no member session, since start. */
  long ignored() {
    return ignored.get();
  }

  /**
   * One notice as received: believed at once from {@code own} (this member's watch session) or a
   * known member session, kept for the next look from any other pid (within the bounds), else
   * ignored.
   *
   * @return true when it was believed: a round is due
   */
  boolean heard(int pid, String notice, int own) {
    if (pid == own || members.contains(pid)) {
      believe.accept(notice);
      return true;
    }
    List<String> kept = unknown.get(pid);
    if (kept == null && unknown.size() < MAX_UNKNOWN_SENDERS) {
      kept = new ArrayList<>();
      unknown.put(pid, kept);
    }
    if (kept != null && kept.size() < MAX_NOTICES_PER_SENDER) {
      kept.add(notice);
      return false;
    }
    ignore(pid, notice);
    return false;
  }

  /**
   * Reads the member sessions when notices from unknown pids wait, or a membership read saw a
   * change, and the last read is at least {@link #SENDER_READ_GAP} old; then believes the waiting
   * notices of members and ignores the rest.
   *
   * @return true when a notice was believed: a round is due
   * @throws SQLException when the read fails
   */
  boolean look(MemberSessions sessions) throws SQLException {
    long now = nanoTime.getAsLong();
    if ((unknown.isEmpty() && !stale) || (read && now - readAt < SENDER_READ_GAP.toNanos())) {
      return false;
    }
    stale = false;
    members = sessions.read();
    read = true;
    readAt = now;
    boolean round = false;
    for (Map.Entry<Integer, List<String>> e : unknown.entrySet()) {
      boolean member = members.contains(e.getKey());
      for (String notice : e.getValue()) {
        if (member) {
          believe.accept(notice);
          round = true;
        } else {
          ignore(e.getKey(), notice);
        }
      }
    }
    unknown.clear();
    return round;
  }

  /** A notice from a pid that is no member session: counted, logged at a bounded rate. */
  private void ignore(int pid, String notice) {
    long n = ignored.incrementAndGet();
    long now = nanoTime.getAsLong();
    if (!ignoredLoggedOnce || now - ignoredLoggedAt >= IGNORED_LOG_GAP.toNanos()) {
      ignoredLoggedOnce = true;
      ignoredLoggedAt = now;
      long since = n - ignoredLogged;
      ignoredLogged = n;
      LOG.debug(
          "{} Ignored {} notice(s) on the group's channel from sessions that are no member of the"
              + " group (the last from pid {}: {})",
          context,
          since,
          pid,
          notice.length() > 64 ? notice.substring(0, 64) + "..." : notice);
    }
  }
}
