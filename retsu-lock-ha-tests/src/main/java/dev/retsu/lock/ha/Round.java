package dev.retsu.lock.ha;

import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TermChecker.Event;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What one fault did, read from the node samples ({@link NodeMonitor}) and the candidates' events
 * ({@link HaCandidate}). Every time is in milliseconds after the fault.
 *
 * <ul>
 *   <li><b>promoted</b>: the first sample of a primary on a newer timeline than the old primary's
 *       (the failover itself, on whichever node);
 *   <li><b>old primary last</b>: the last sample of the old primary still a primary on the old
 *       timeline: up to then a client connecting to it directly was granted locks;
 *   <li><b>two primaries</b>: old primary last − promoted, when positive: both servers granted the
 *       key (a split brain); negative is the gap between the old primary's end and the promotion;
 *   <li><b>takeover</b>: the first passed check of a term on the newer timeline;
 *   <li><b>old leader</b>: how and when the term that led at the fault ended, and its last check;
 *   <li><b>acting overlap</b>: the largest (check of a term on the old timeline − start of the
 *       first term on the newer one), when positive: a candidate on the old primary still passed
 *       its leader check while the new term ran;
 *   <li><b>tokens</b>: the old leader's and the first newer term's, whether the second is newer,
 *       and whether its transaction id went back (order kept by the timeline alone);
 *   <li><b>effects</b> after the fault: accepted, rejected (stale tokens), failed writes.
 * </ul>
 *
 * @param scenario the scenario
 * @param rep the repetition
 * @param figures the figures, by column, as text (empty text when not applicable)
 */
public record Round(String scenario, int rep, Map<String, String> figures) {

  /**
   * Sets a figure the scenario measured itself.
   *
   * @param column one of {@link #COLUMNS}
   * @param value its value
   */
  public void put(String column, String value) {
    if (!COLUMNS.contains(column)) {
      throw new IllegalArgumentException(
          "column must be one of " + COLUMNS + ", but was " + column);
    }
    figures.put(column, value);
  }

  /** The columns, in order. */
  public static final List<String> COLUMNS =
      List.of(
          "old_primary",
          "new_primary",
          "promoted_ms",
          "old_primary_last_ms",
          "two_primaries_ms",
          "takeover_ms",
          "old_leader_end",
          "old_leader_lost_ms",
          "old_leader_last_check_ms",
          "acting_overlap_ms",
          "overlapping_terms",
          "old_token",
          "new_token",
          "token_newer",
          "xid_went_back",
          "effects_accepted",
          "effects_rejected",
          "effects_failed",
          "old_node_rejoined",
          "stall_term_token",
          "stall_token_on_new_primary",
          "stall_effects_accepted",
          "stall_effects_lost");

  /**
   * What the round started from.
   *
   * @param scenario the scenario
   * @param rep the repetition
   * @param faultNanos when the fault struck
   * @param oldPrimary the primary at the fault
   * @param oldTimeline its timeline
   * @param leader the candidate that led at the fault
   * @param leaderTerm its term number
   * @param leaderToken its token
   */
  public record Start(
      String scenario,
      int rep,
      long faultNanos,
      String oldPrimary,
      int oldTimeline,
      String leader,
      String leaderTerm,
      String leaderToken) {}

  /**
   * Reads a round.
   *
   * @param start what it started from
   * @param samples the node samples
   * @param events every candidate event, sorted by time
   * @param until the end of the round
   * @return the figures
   */
  public static Round read(
      Start start, List<NodeMonitor.Sample> samples, List<Event> events, long until) {
    long f = start.faultNanos();
    Map<String, String> x = new LinkedHashMap<>();
    for (String c : COLUMNS) {
      x.put(c, "");
    }
    x.put("old_primary", start.oldPrimary());
    Long promoted = null;
    Long oldLast = null;
    for (NodeMonitor.Sample s : samples) {
      if (s.nanos() <= f || s.nanos() > until) {
        continue;
      }
      if (promoted == null
          && s.state() == NodeMonitor.State.PRIMARY
          && s.timeline() > start.oldTimeline()) {
        promoted = s.nanos();
        x.put("new_primary", s.node());
      }
      if (s.node().equals(start.oldPrimary())
          && s.state() == NodeMonitor.State.PRIMARY
          && s.timeline() == start.oldTimeline()) {
        oldLast = s.nanos();
      }
    }
    x.put("promoted_ms", ms(promoted, f));
    x.put("old_primary_last_ms", ms(oldLast, f));
    if (promoted != null && oldLast != null) {
      x.put("two_primaries_ms", fmt((oldLast - promoted) / 1e6));
    }

    // terms after the fault on a newer timeline; the first one's start and check
    Long newAcquired = null;
    Long takeover = null;
    String newToken = "";
    for (Event e : events) {
      if (e.nanos() <= f || e.nanos() > until || !e.kind().equals("ACQUIRED")) {
        continue;
      }
      TermChecker.Token t = TermChecker.token(e.fields().get(1));
      if (t.timeline() > start.oldTimeline()) {
        if (newAcquired == null || e.nanos() < newAcquired) {
          newAcquired = e.nanos();
          newToken = e.fields().get(1);
        }
        Optional<Long> check = firstCheck(events, e);
        if (check.isPresent() && (takeover == null || check.get() < takeover)) {
          takeover = check.get();
        }
      }
    }
    x.put("takeover_ms", ms(takeover, f));
    x.put("old_token", start.leaderToken());
    x.put("new_token", newToken);
    if (!newToken.isEmpty()) {
      TermChecker.Token o = TermChecker.token(start.leaderToken());
      TermChecker.Token n = TermChecker.token(newToken);
      x.put("token_newer", Boolean.toString(n.isNewerThan(o)));
      x.put("xid_went_back", Boolean.toString(n.xid() <= o.xid()));
    }

    // the old leader's term
    Long lastCheck = null;
    for (Event e : events) {
      if (e.member().equals(start.leader())
          && !e.fields().isEmpty()
          && e.fields().get(0).equals(start.leaderTerm())
          && e.nanos() <= until) {
        if (e.kind().equals("LOST")) {
          x.put("old_leader_end", e.fields().get(1));
          x.put("old_leader_lost_ms", ms(e.nanos(), f));
        } else if (e.kind().equals("CHECK") && e.nanos() > f) {
          lastCheck = e.nanos();
        }
      }
    }
    if (x.get("old_leader_end").isEmpty()) {
      x.put("old_leader_end", "KEPT");
    }
    x.put("old_leader_last_check_ms", lastCheck == null ? "none" : ms(lastCheck, f));

    // checks of terms on the old timeline after the first newer term started
    if (newAcquired != null) {
      long worst = Long.MIN_VALUE;
      List<String> who = new ArrayList<>();
      Map<String, Integer> termTimeline = new LinkedHashMap<>();
      for (Event e : events) {
        if (e.kind().equals("ACQUIRED")) {
          termTimeline.put(
              e.member() + "#" + e.fields().get(0),
              TermChecker.token(e.fields().get(1)).timeline());
        }
      }
      for (Event e : events) {
        if (!e.kind().equals("CHECK") || e.nanos() <= newAcquired || e.nanos() > until) {
          continue;
        }
        String id = e.member() + "#" + e.fields().get(0);
        Integer tl = termTimeline.get(id);
        if (tl != null && tl <= start.oldTimeline()) {
          worst = Math.max(worst, e.nanos() - newAcquired);
          if (!who.contains(id)) {
            who.add(id);
          }
        }
      }
      x.put("acting_overlap_ms", worst == Long.MIN_VALUE ? "0" : fmt(worst / 1e6));
      x.put("overlapping_terms", String.join(" ", who));
    }

    int accepted = 0;
    int rejected = 0;
    int failed = 0;
    for (Event e : events) {
      if (e.kind().equals("EFFECT") && e.nanos() > f && e.nanos() <= until) {
        String outcome = e.fields().get(2);
        if (outcome.equals("ACCEPTED")) {
          accepted++;
        } else if (outcome.equals("REJECTED")) {
          rejected++;
        } else {
          failed++;
        }
      }
    }
    x.put("effects_accepted", Integer.toString(accepted));
    x.put("effects_rejected", Integer.toString(rejected));
    x.put("effects_failed", Integer.toString(failed));
    return new Round(start.scenario(), start.rep(), x);
  }

  private static Optional<Long> firstCheck(List<Event> events, Event acquired) {
    return events.stream()
        .filter(
            e ->
                e.member().equals(acquired.member())
                    && e.kind().equals("CHECK")
                    && e.fields().get(0).equals(acquired.fields().get(0))
                    && e.nanos() >= acquired.nanos())
        .map(Event::nanos)
        .findFirst();
  }

  private static String ms(Long nanos, long fault) {
    return nanos == null ? "" : fmt((nanos - fault) / 1e6);
  }

  static String fmt(double ms) {
    return String.format(Locale.ROOT, "%.0f", ms);
  }
}
