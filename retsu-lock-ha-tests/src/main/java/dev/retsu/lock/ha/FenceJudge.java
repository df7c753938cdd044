package dev.retsu.lock.ha;

import dev.retsu.lock.testing.TermChecker;
import dev.retsu.lock.testing.TermChecker.Event;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Judges the downstream fence from the candidates' events: <b>a stale effect is accepted</b> when
 * an effect's write began after another effect with a newer token had been accepted, and was
 * accepted too. The fence's own rule (accept a token only if it is not older than the largest it
 * holds) forbids it as long as the fence keeps what it accepted; it can break only if the fence's
 * state is lost (an accepted write that a failover throws away) or if writes reach two fences (two
 * primaries behind the endpoint).
 */
public final class FenceJudge {

  private FenceJudge() {}

  /**
   * One effect as a candidate reported it.
   *
   * @param member the candidate
   * @param term its term
   * @param token the token it carried
   * @param outcome ACCEPTED, REJECTED or FAILED:sqlstate
   * @param start when its write began
   * @param end when the write returned
   */
  public record Effect(
      String member, String term, TermChecker.Token token, String outcome, long start, long end) {}

  /**
   * The effects in a timeline.
   *
   * @param events the events
   * @return every EFFECT, in order
   */
  public static List<Effect> effects(List<Event> events) {
    List<Effect> out = new ArrayList<>();
    for (Event e : events) {
      if (e.kind().equals("EFFECT")) {
        out.add(
            new Effect(
                e.member(),
                e.fields().get(0),
                TermChecker.token(e.fields().get(1)),
                e.fields().get(2),
                Long.parseLong(e.fields().get(3)),
                e.nanos()));
      }
    }
    return out;
  }

  /**
   * Every stale effect that was accepted.
   *
   * @param effects the effects
   * @return one line per stale acceptance; empty when the fence held
   */
  public static List<String> staleAccepted(List<Effect> effects) {
    List<String> out = new ArrayList<>();
    for (Effect late : effects) {
      if (!late.outcome().equals("ACCEPTED")) {
        continue;
      }
      for (Effect newer : effects) {
        if (newer.outcome().equals("ACCEPTED")
            && newer.end() < late.start()
            && newer.token().isNewerThan(late.token())) {
          out.add(
              String.format(
                  Locale.ROOT,
                  "STALE EFFECT ACCEPTED: %s#%s with token %s, begun %.1f ms after %s#%s's"
                      + " effect with the newer token %s was accepted",
                  late.member(),
                  late.term(),
                  late.token(),
                  (late.start() - newer.end()) / 1e6,
                  newer.member(),
                  newer.term(),
                  newer.token()));
          break;
        }
      }
    }
    return out;
  }

  /**
   * Whether the cluster's own history went back: a term started under a token older than one an
   * earlier term had, which happens only when the HA manager gives leadership back to a node whose
   * history lacks the newer primary's commits (the fence table's among them).
   *
   * @param events every candidate's events
   * @return the first such pair, described, or empty
   */
  public static java.util.Optional<String> historyWentBack(List<Event> events) {
    TermChecker.Token newest = null;
    String newestTerm = null;
    List<Event> acquired =
        events.stream()
            .filter(e -> e.kind().equals("ACQUIRED"))
            .sorted(java.util.Comparator.comparingLong(Event::nanos))
            .toList();
    for (Event e : acquired) {
      TermChecker.Token t = TermChecker.token(e.fields().get(1));
      if (newest != null && newest.isNewerThan(t)) {
        return java.util.Optional.of(
            e.member()
                + "#"
                + e.fields().get(0)
                + " started under "
                + t
                + " after "
                + newestTerm
                + " had "
                + newest);
      }
      if (newest == null || t.isNewerThan(newest)) {
        newest = t;
        newestTerm = e.member() + "#" + e.fields().get(0);
      }
    }
    return java.util.Optional.empty();
  }

  /**
   * The rejected effects: each carried a token older than one the fence had accepted.
   *
   * @param effects the effects
   * @return how many were rejected
   */
  public static long rejected(List<Effect> effects) {
    return effects.stream().filter(e -> e.outcome().equals("REJECTED")).count();
  }
}
