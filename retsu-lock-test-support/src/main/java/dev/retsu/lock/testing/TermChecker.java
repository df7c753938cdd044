package dev.retsu.lock.testing;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * Rebuilds terms from the candidates' events and checks the claim "at most one acting leader". A
 * candidate acts as leader from a passed {@code ensureLeader()} ({@code CHECK}) to the effect that
 * check guards ({@code EFFECT}). A term spans [ACQUIRED, max(last EFFECT, LOST)]. All times are one
 * machine's CLOCK_MONOTONIC, so the clock error between candidates is zero. Violations:
 *
 * <ul>
 *   <li><b>check after a newer term started</b>: a {@code CHECK} of a term stamped after the
 *       ACQUIRED of a term that started later. This is the guarantee itself: no candidate passes
 *       {@code ensureLeader()} once another candidate's term has started. Whatever ended the old
 *       term (a killed session, a partition, user code releasing the lock), a check that passes
 *       after the new term began lets two candidates act at once;
 *   <li><b>released while acting</b>: a term whose lock only the library could release (no fault
 *       that frees the lock on the server was injected into it: no kill, termination, restart,
 *       partition, pause, server timeout or user unlock) still acts, or is not yet reported lost,
 *       when the next term is acquired. Its span ends at its last EFFECT or CHECK, and at its LOST
 *       event when the client ended it itself (CLOSED, YIELDED, REFRESH_FAILED, REFRESH_TIMED_OUT:
 *       listeners are told before the lock is released). E.g. a graceful close() that releases the
 *       lock while the task still runs;
 *   <li><b>tokens</b> strictly increase from term to term, in the order terms start;
 *   <li><b>reasons</b>: every term of a candidate that was not killed ends with a LOST event, and
 *       no CHECK follows its LOST.
 * </ul>
 *
 * <p>Measured, not failed: the <b>residual window</b>, the largest (EFFECT of a term − ACQUIRED of
 * the next term) where positive. It is what a check that passed just before a server-side loss
 * still allows (the effect lands after the successor started); only a fencing token checked by the
 * effect's target closes it. And, per injected fault, the largest (CHECK − injection) of the term
 * the fault hit: how long that candidate kept passing its leader check after the fault.
 *
 * <p>Used by core's fault suite (one lock, candidate JVMs) and per key by the group tests and the
 * group benchmark (one timeline per key). It depends on nothing of core: a fencing token is read
 * from its text ({@code FencingToken.toString()}).
 */
public final class TermChecker {

  private static final Set<String> CLIENT_ENDED =
      Set.of("CLOSED", "YIELDED", "REFRESH_FAILED", "REFRESH_TIMED_OUT");

  /**
   * One event a candidate reported.
   *
   * @param nanos when, on the machine's monotonic clock ({@code System.nanoTime()} on Linux)
   * @param member the candidate
   * @param kind ACQUIRED (fields: term, token), CHECK (term), EFFECT (term), LOST (term, reason);
   *     any other kind carries no term state and is passed over
   * @param fields the event's fields, the term number first
   */
  public record Event(long nanos, String member, String kind, List<String> fields) {}

  /**
   * A fencing token as the checker orders it: by timeline, then redo position, then transaction id.
   *
   * @param timeline the WAL timeline
   * @param redo the redo position of the latest checkpoint
   * @param xid the transaction id
   * @param text the token as written
   */
  public record Token(int timeline, long redo, long xid, String text) {

    /**
     * Returns whether this token comes strictly after another: by timeline, then redo position,
     * then xid, each unsigned, read from the parts (not from the text's own order).
     *
     * @param other another token
     * @return true if newer
     */
    public boolean isNewerThan(Token other) {
      int c = Integer.compareUnsigned(timeline, other.timeline);
      if (c == 0) {
        c = Long.compareUnsigned(redo, other.redo);
      }
      return c != 0 ? c > 0 : Long.compareUnsigned(xid, other.xid) > 0;
    }

    @Override
    public String toString() {
      return text;
    }
  }

  /**
   * A broken invariant.
   *
   * @param nanos when it happened: the offending event, or the start of the newer term it broke
   * @param text what broke, naming the terms
   */
  public record Violation(long nanos, String text) {}

  /**
   * One rebuilt term.
   *
   * @param member the candidate
   * @param number its term number
   * @param start its ACQUIRED
   * @param end the end of its span (see the class comment)
   * @param token its fencing token
   * @param reason the LOST reason, null when it was never reported lost
   * @param checks its passed checks
   * @param lastEffect its last EFFECT, Long.MIN_VALUE when none
   * @param lost its LOST, Long.MIN_VALUE when none
   */
  public record TermSpan(
      String member,
      String number,
      long start,
      long end,
      Token token,
      String reason,
      List<Long> checks,
      long lastEffect,
      long lost) {

    /**
     * Returns {@code member#number}.
     *
     * @return the term's id
     */
    public String id() {
      return member + "#" + number;
    }

    @Override
    public String toString() {
      return id() + " (token " + token + ", " + (reason == null ? "no LOST" : reason) + ")";
    }
  }

  /**
   * A fault injected into a term.
   *
   * @param round the scenario's round
   * @param member the candidate it hit
   * @param term the term it hit
   * @param nanos when it was injected
   * @param serverSide whether it can free the lock without the library (kill, termination, restart,
   *     partition, pause, server timeout, user unlock), as opposed to faults the library handles
   *     itself (the task throws or hangs, a graceful close)
   * @param label fault and phase, for messages
   * @param allowanceNanos how long after the injection a check of the hit term may still pass
   *     although a newer term has started: zero for every fault the library must see at once; the
   *     stated bound for a fault it can only find by a later proof (user SQL that releases the key
   *     through a function: one {@code heartbeatInterval}). A check later than that is a violation.
   */
  public record Injection(
      int round,
      String member,
      String term,
      long nanos,
      boolean serverSide,
      String label,
      long allowanceNanos) {

    /**
     * An injection with no allowance.
     *
     * @param round the scenario's round
     * @param member the candidate it hit
     * @param term the term it hit
     * @param nanos when it was injected
     * @param serverSide whether it can free the lock without the library
     * @param label fault and phase, for messages
     */
    public Injection(
        int round, String member, String term, long nanos, boolean serverSide, String label) {
      this(round, member, term, nanos, serverSide, label, 0);
    }

    /**
     * Returns {@code member#term}.
     *
     * @return the id of the term it hit
     */
    public String termId() {
      return member + "#" + term;
    }
  }

  /**
   * What one injection led to.
   *
   * @param injection the injection
   * @param checkAfterFaultNanos the largest (CHECK − injection) of the term it hit, else 0
   * @param residualNanos the term's (last EFFECT − next ACQUIRED) where positive, else 0
   */
  public record Aftermath(Injection injection, long checkAfterFaultNanos, long residualNanos) {}

  /**
   * What the check found.
   *
   * @param terms the terms, by start
   * @param found the broken invariants, in the order found; empty when the run was safe
   * @param smallestGapNanos the smallest gap between a span's end and the next start (negative when
   *     spans overlap; Long.MAX_VALUE with fewer than two terms)
   * @param residualNanos the largest (EFFECT − next ACQUIRED) where positive, else 0
   * @param aftermath per injection, in order
   */
  public record Result(
      List<TermSpan> terms,
      List<Violation> found,
      long smallestGapNanos,
      long residualNanos,
      List<Aftermath> aftermath) {

    /**
     * Returns what broke, as text.
     *
     * @return one line per violation, empty when the run was safe
     */
    public List<String> violations() {
      return found.stream().map(Violation::text).toList();
    }
  }

  private TermChecker() {}

  /**
   * Checks a run without injected faults; throws on any violation.
   *
   * @param timeline the events, by time
   * @param killed candidates killed, whose last term may end without a LOST
   * @return what it found
   */
  public static Result check(List<Event> timeline, Set<String> killed) {
    Result r = analyse(timeline, killed, List.of());
    if (!r.violations().isEmpty()) {
      throw new AssertionError("Invariant violations:\n  " + String.join("\n  ", r.violations()));
    }
    return r;
  }

  /**
   * Rebuilds the terms and collects every violation and measurement; never throws on them.
   *
   * @param timeline the events, by time
   * @param killed candidates killed, whose last term may end without a LOST
   * @param injections the faults injected
   * @return what it found
   */
  public static Result analyse(
      List<Event> timeline, Set<String> killed, Collection<Injection> injections) {
    Map<String, TermSpanBuilder> builders = new LinkedHashMap<>();
    List<Violation> violations = new ArrayList<>();
    for (Event e : timeline) {
      String termKey = e.member() + "#" + (e.fields().isEmpty() ? "" : e.fields().get(0));
      switch (e.kind()) {
        case "ACQUIRED" -> {
          TermSpanBuilder b = new TermSpanBuilder();
          b.member = e.member();
          b.number = e.fields().get(0);
          b.start = e.nanos();
          b.token = token(e.fields().get(1));
          builders.put(termKey, b);
        }
        case "CHECK" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add(new Violation(e.nanos(), "CHECK without ACQUIRED: " + e));
          } else {
            if (b.reason != null) {
              violations.add(
                  new Violation(
                      e.nanos(),
                      "CHECK after LOST "
                          + b.reason
                          + ": ensureLeader() passed "
                          + ms(e.nanos() - b.lost)
                          + " ms after the term was reported lost: "
                          + e));
            }
            b.checks.add(e.nanos());
          }
        }
        case "EFFECT" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add(new Violation(e.nanos(), "EFFECT without ACQUIRED: " + e));
          } else {
            b.lastEffect = Math.max(b.lastEffect, e.nanos());
          }
        }
        case "LOST" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add(new Violation(e.nanos(), "LOST without ACQUIRED: " + e));
          } else {
            b.reason = e.fields().get(1);
            b.lost = e.nanos();
          }
        }
        default -> {
          // READY, ATTEMPT, ARMED, PHASE, UNLOCKED, EXIT, STOPPED: no term state
        }
      }
    }
    List<TermSpan> terms = new ArrayList<>();
    for (TermSpanBuilder b : builders.values()) {
      if (b.reason == null && !killed.contains(b.member)) {
        violations.add(
            new Violation(
                b.start, "term " + b.member + "#" + b.number + " ended without a reason"));
      }
      terms.add(b.build());
    }
    terms.sort(Comparator.comparingLong(TermSpan::start));
    Map<String, Injection> serverFaulted = new LinkedHashMap<>();
    for (Injection i : injections) {
      if (i.serverSide()) {
        serverFaulted.put(i.termId(), i);
      }
    }

    long smallestGap = Long.MAX_VALUE;
    long maxEnd = Long.MIN_VALUE;
    long residual = 0;
    for (int i = 0; i + 1 < terms.size(); i++) {
      TermSpan t = terms.get(i);
      TermSpan n = terms.get(i + 1); // the first newer term: it started before any later one
      maxEnd = Math.max(maxEnd, t.end());
      smallestGap = Math.min(smallestGap, n.start() - maxEnd);
      if (!n.token().isNewerThan(t.token())) {
        violations.add(new Violation(n.start(), "token did not increase: " + t + " then " + n));
      }
      if (t.lastEffect() > n.start()) {
        residual = Math.max(residual, t.lastEffect() - n.start());
      }
      // The guarantee: no check of this term passes once a newer term has started (beyond the
      // stated bound of a fault only a later proof can find).
      Injection hit = serverFaulted.get(t.id());
      long allowedUntil =
          hit == null || hit.allowanceNanos() == 0
              ? n.start()
              : Math.max(n.start(), hit.nanos() + hit.allowanceNanos());
      List<Long> late = t.checks().stream().filter(c -> c > allowedUntil).toList();
      if (!late.isEmpty()) {
        violations.add(
            violation(
                late.get(0),
                "CHECK AFTER A NEWER TERM STARTED: %s passed ensureLeader() %.1f ms after %s was"
                    + " ACQUIRED (%d such check(s), the last %.1f ms after)%s",
                t,
                (late.get(0) - n.start()) / 1e6,
                n,
                late.size(),
                (late.get(late.size() - 1) - n.start()) / 1e6,
                faultNote(serverFaulted.get(t.id()), late.get(0))));
      }
      if (!serverFaulted.containsKey(t.id()) && t.end() > n.start()) {
        violations.add(
            violation(
                n.start(),
                "RELEASED WHILE ACTING: %s, whose lock only the library could release, %s %.1f ms"
                    + " after %s was ACQUIRED",
                t,
                t.end() == t.lastEffect()
                    ? "still did its effect"
                    : t.end() == t.lost() ? "was reported lost" : "still passed a check",
                (t.end() - n.start()) / 1e6,
                n));
      }
    }

    List<Aftermath> aftermath = new ArrayList<>();
    for (Injection inj : injections) {
      Optional<TermSpan> hit = terms.stream().filter(t -> t.id().equals(inj.termId())).findFirst();
      long checkAfter = 0;
      long residualHere = 0;
      if (hit.isPresent()) {
        TermSpan t = hit.get();
        for (long c : t.checks()) {
          if (c > inj.nanos()) {
            checkAfter = Math.max(checkAfter, c - inj.nanos());
          }
        }
        int idx = terms.indexOf(t);
        if (idx + 1 < terms.size() && t.lastEffect() > terms.get(idx + 1).start()) {
          residualHere = t.lastEffect() - terms.get(idx + 1).start();
        }
      }
      aftermath.add(new Aftermath(inj, checkAfter, residualHere));
    }
    return new Result(terms, violations, smallestGap, residual, aftermath);
  }

  private static String faultNote(Injection i, long check) {
    if (i == null) {
      return "";
    }
    return String.format(
        Locale.ROOT,
        " (fault %s in round %d injected %.1f ms before that check)",
        i.label(),
        i.round(),
        (check - i.nanos()) / 1e6);
  }

  /**
   * Checks many independent timelines, one per key (a {@code LeaderGroup}'s keys): at no moment two
   * acting owners of one key, tokens strictly increasing per key. Each key's events are sorted by
   * time first.
   *
   * @param byKey each key's events, in any order
   * @param killed candidates killed, whose last terms may end without a LOST
   * @param serverFaulted asked for each ACQUIRED: whether a server-side fault (a kill, a server
   *     restart) may have freed that term's lock without the library
   * @param <K> the key type
   * @return every violation, its text prefixed with {@code "<key>: "}; empty when safe
   */
  public static <K> List<Violation> analyseEach(
      Map<K, ? extends Collection<Event>> byKey,
      Set<String> killed,
      BiPredicate<K, Event> serverFaulted) {
    List<Violation> out = new ArrayList<>();
    for (Map.Entry<K, ? extends Collection<Event>> e : byKey.entrySet()) {
      List<Event> timeline = new ArrayList<>(e.getValue());
      timeline.sort(Comparator.comparingLong(Event::nanos));
      List<Injection> injections = new ArrayList<>();
      for (Event ev : timeline) {
        if (ev.kind().equals("ACQUIRED") && serverFaulted.test(e.getKey(), ev)) {
          injections.add(
              new Injection(
                  0, ev.member(), ev.fields().get(0), ev.nanos(), true, "server-side fault"));
        }
      }
      for (Violation v : analyse(timeline, killed, injections).found()) {
        out.add(new Violation(v.nanos(), e.getKey() + ": " + v.text()));
      }
    }
    return out;
  }

  private static Violation violation(long nanos, String format, Object... args) {
    return new Violation(nanos, String.format(Locale.ROOT, format, args));
  }

  private static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
  }

  /**
   * Reads a token from its text: three numbers, each a capital letter giving its count of digits
   * ({@code A} = 1) and then the digits, e.g. {@code A1I704643112E12059}.
   *
   * @param text the token's text
   * @return the token
   */
  public static Token token(String text) {
    long[] parts = new long[3];
    int at = 0;
    for (int p = 0; p < 3; p++) {
      int digits = at < text.length() ? text.charAt(at) - 'A' + 1 : 0;
      if (digits < 1 || digits > 20 || at + 1 + digits > text.length()) {
        throw new IllegalArgumentException("not a token: " + text);
      }
      parts[p] = Long.parseUnsignedLong(text.substring(at + 1, at + 1 + digits));
      at += 1 + digits;
    }
    if (at != text.length()) {
      throw new IllegalArgumentException("not a token: " + text);
    }
    return new Token((int) parts[0], parts[1], parts[2], text);
  }

  private static final class TermSpanBuilder {
    String member;
    String number;
    long start;
    Token token;
    String reason;
    long lost = Long.MIN_VALUE;
    long lastEffect = Long.MIN_VALUE;
    final List<Long> checks = new ArrayList<>();

    TermSpan build() {
      long end = start;
      for (long c : checks) {
        end = Math.max(end, c);
      }
      end = Math.max(end, lastEffect);
      if (reason != null && CLIENT_ENDED.contains(reason)) {
        end = Math.max(end, lost);
      }
      return new TermSpan(
          member, number, start, end, token, reason, List.copyOf(checks), lastEffect, lost);
    }
  }
}
