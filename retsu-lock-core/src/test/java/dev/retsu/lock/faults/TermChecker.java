package dev.retsu.lock.faults;

import dev.retsu.lock.FencingToken;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Rebuilds terms from the candidates' events and checks the invariants:
 *
 * <ul>
 *   <li><b>no overlap</b>: sorted by start, every term ends before the next one starts. A term
 *       starts at its ACQUIRED event. It ends at its last WORK, or at its LOST event when the
 *       client itself ended the session (CLOSED, REFRESH_FAILED, REFRESH_TIMED_OUT: listeners are
 *       told before the lock is released). A lost session (SESSION_LOST) or a fenced term
 *       (SELF_FENCED) ends at its last work: the server may have released the lock before the
 *       client heard of it, and the check is that no work happened after that. All times are one
 *       machine's CLOCK_MONOTONIC, so the clock error between candidates is zero;
 *   <li><b>tokens</b> strictly increase from term to term;
 *   <li><b>reasons</b>: every term of a candidate that was not killed ends with a LOST event, and
 *       no WORK follows its LOST.
 * </ul>
 */
final class TermChecker {

  /** One rebuilt term. */
  record TermSpan(
      String member, String number, long start, long end, FencingToken token, String reason) {}

  /** What the check found. */
  record Result(List<TermSpan> terms, long smallestGapNanos) {}

  private TermChecker() {}

  static Result check(List<Fleet.Event> timeline, Set<String> killed) {
    Map<String, long[]> openStart = new LinkedHashMap<>();
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
          b.end = e.nanos();
          b.token = token(e.fields().get(1));
          builders.put(termKey, b);
          openStart.put(termKey, new long[] {e.nanos()});
        }
        case "WORK" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add("WORK without ACQUIRED: " + e);
          } else if (b.reason != null) {
            violations.add("WORK after LOST " + b.reason + ": " + e);
          } else {
            b.end = Math.max(b.end, e.nanos());
          }
        }
        case "LOST" -> {
          TermSpanBuilder b = builders.get(termKey);
          if (b == null) {
            violations.add("LOST without ACQUIRED: " + e);
          } else {
            b.reason = e.fields().get(1);
            if (Set.of("CLOSED", "REFRESH_FAILED", "REFRESH_TIMED_OUT").contains(b.reason)) {
              b.end = Math.max(b.end, e.nanos());
            }
          }
        }
        default -> {
          // READY, EXIT, STOPPED: no term state
        }
      }
    }
    List<TermSpan> terms = new ArrayList<>();
    for (TermSpanBuilder b : builders.values()) {
      if (b.reason == null && !killed.contains(b.member)) {
        violations.add("term " + b.member + "#" + b.number + " ended without a reason");
      }
      terms.add(new TermSpan(b.member, b.number, b.start, b.end, b.token, b.reason));
    }
    terms.sort(Comparator.comparingLong(TermSpan::start));
    long smallestGap = Long.MAX_VALUE;
    long maxEnd = Long.MIN_VALUE;
    TermSpan maxEndTerm = null;
    for (int i = 0; i < terms.size(); i++) {
      TermSpan t = terms.get(i);
      if (maxEndTerm != null) {
        long gap = t.start() - maxEnd;
        smallestGap = Math.min(smallestGap, gap);
        if (gap <= 0) {
          violations.add(
              "OVERLAP of "
                  + (-gap)
                  + " ns: "
                  + maxEndTerm
                  + " still active when "
                  + t
                  + " started");
        }
        if (!t.token().isNewerThan(terms.get(i - 1).token())) {
          violations.add("token did not increase: " + terms.get(i - 1) + " then " + t);
        }
      }
      if (t.end() > maxEnd) {
        maxEnd = t.end();
        maxEndTerm = t;
      }
    }
    if (!violations.isEmpty()) {
      throw new AssertionError("Invariant violations:\n  " + String.join("\n  ", violations));
    }
    return new Result(terms, smallestGap);
  }

  static FencingToken token(String text) {
    String[] parts = text.split("/");
    return new FencingToken(Integer.parseInt(parts[0]), Long.parseLong(parts[1]));
  }

  private static final class TermSpanBuilder {
    String member;
    String number;
    long start;
    long end;
    FencingToken token;
    String reason;
  }
}
