package dev.retsu.lock.faults;

import dev.retsu.lock.FencingToken;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

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
 *       event when the client ended it itself (CLOSED, REFRESH_FAILED, REFRESH_TIMED_OUT: listeners
 *       are told before the lock is released). E.g. a graceful close() that releases the lock while
 *       the task still runs;
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
 */
final class TermChecker {

  private static final Set<String> CLIENT_ENDED =
      Set.of("CLOSED", "REFRESH_FAILED", "REFRESH_TIMED_OUT");

  /** One rebuilt term. */
  record TermSpan(
      String member,
      String number,
      long start,
      long end,
      FencingToken token,
      String reason,
      List<Long> checks,
      long lastEffect,
      long lost) {

    String id() {
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
   */
  record Injection(
      int round, String member, String term, long nanos, boolean serverSide, String label) {

    String termId() {
      return member + "#" + term;
    }
  }

  /** What one injection led to. */
  record Aftermath(Injection injection, long checkAfterFaultNanos, long residualNanos) {}

  /**
   * What the check found.
   *
   * @param terms the terms, by start
   * @param violations the broken invariants, empty when the run was safe
   * @param smallestGapNanos the smallest gap between a span's end and the next start (negative when
   *     spans overlap; Long.MAX_VALUE with fewer than two terms)
   * @param residualNanos the largest (EFFECT − next ACQUIRED) where positive, else 0
   * @param aftermath per injection, in order
   */
  record Result(
      List<TermSpan> terms,
      List<String> violations,
      long smallestGapNanos,
      long residualNanos,
      List<Aftermath> aftermath) {}

  private TermChecker() {}

  /** Checks a run without injected faults; throws on any violation. */
  static Result check(List<Fleet.Event> timeline, Set<String> killed) {
    Result r = analyse(timeline, killed, List.of());
    if (!r.violations().isEmpty()) {
      throw new AssertionError("Invariant violations:\n  " + String.join("\n  ", r.violations()));
    }
    return r;
  }

  /** Rebuilds the terms and collects every violation and measurement; never throws on them. */
  static Result analyse(
      List<Fleet.Event> timeline, Set<String> killed, Collection<Injection> injections) {
    Map<String, TermSpanBuilder> builders = new LinkedHashMap<>();
    List<String> violations = new ArrayList<>();
    for (Fleet.Event e : timeline) {
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
            violations.add("CHECK without ACQUIRED: " + e);
          } else {
            if (b.reason != null) {
              violations.add(
                  "CHECK after LOST "
                      + b.reason
                      + ": ensureLeader() passed "
                      + ms(e.nanos() - b.lost)
                      + " ms after the term was reported lost: "
                      + e);
            }
            b.checks.add(e.nanos());
          }
        }
        case "EFFECT" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add("EFFECT without ACQUIRED: " + e);
          } else {
            b.lastEffect = Math.max(b.lastEffect, e.nanos());
          }
        }
        case "LOST" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add("LOST without ACQUIRED: " + e);
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
        violations.add("term " + b.member + "#" + b.number + " ended without a reason");
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
        violations.add("token did not increase: " + t + " then " + n);
      }
      if (t.lastEffect() > n.start()) {
        residual = Math.max(residual, t.lastEffect() - n.start());
      }
      // The guarantee: no check of this term passes once a newer term has started.
      List<Long> late = t.checks().stream().filter(c -> c > n.start()).toList();
      if (!late.isEmpty()) {
        violations.add(
            String.format(
                Locale.ROOT,
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
            String.format(
                Locale.ROOT,
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

  private static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
  }

  static FencingToken token(String text) {
    String[] parts = text.split("/");
    return new FencingToken(Integer.parseInt(parts[0]), Long.parseLong(parts[1]));
  }

  private static final class TermSpanBuilder {
    String member;
    String number;
    long start;
    FencingToken token;
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
