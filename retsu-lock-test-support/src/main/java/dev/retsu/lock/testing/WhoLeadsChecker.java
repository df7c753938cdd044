package dev.retsu.lock.testing;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Checks that every "who leads" answer (a watch's view, a one-query read, the CLI) named a real
 * term: the fault suite samples the answers during a run, and this rebuilds the candidates' terms
 * from the same events {@link TermChecker} reads (ACQUIRED with term, token and backend pid; LOST)
 * and judges each answer:
 *
 * <ul>
 *   <li><b>a candidate named</b> (not foreign): some term of that candidate with that backend pid
 *       and that token had not ended before that moment, within the answer's lag (until LOST + lag;
 *       a term without LOST is open; from its grant, which may precede its ACQUIRED by the
 *       lock-delay: a token names one term only); without a token, a session of a candidate that
 *       led during the run (it claims no term: before its token statement, or a closed WAIT
 *       standby's backend granted the key before it noticed its client was gone); with no candidate
 *       at all (a session of the candidates' role whose name is none yet), a term's own session
 *       around its grant; and the pid is never a hostile session's;
 *   <li><b>a foreign holder</b>: a hostile session that held the key within the lag, never a
 *       candidate's session;
 *   <li><b>nobody</b>: no term was surely live, i.e. none started at least a lag before and neither
 *       ended nor was struck by a fault (which may end it on the server before its candidate
 *       reports it) within a lag after.
 * </ul>
 *
 * The lag is the documented delay of the source (a watch sees a change within its {@code
 * checkInterval} plus a round trip; a read is current when it runs) plus the time a candidate takes
 * to print its event. All times are one machine's CLOCK_MONOTONIC, as in {@link TermChecker}.
 */
public final class WhoLeadsChecker {

  private static final Set<String> CLIENT_ENDED =
      Set.of("CLOSED", "YIELDED", "REFRESH_FAILED", "REFRESH_TIMED_OUT");

  /**
   * One answer to "who leads this key".
   *
   * @param nanos when it was given, on the machine's monotonic clock
   * @param source where it came from ({@code watch}, {@code info}, ...), for messages
   * @param lagNanos how far the answer may trail the truth (see the class comment)
   * @param candidate the candidate it named, null for nobody or a foreign holder
   * @param pid the holder's backend pid, 0 for nobody
   * @param token the token it named, in its text form, null when none
   * @param foreign whether it showed a holder outside the candidates' role
   */
  public record Answer(
      long nanos,
      String source,
      long lagNanos,
      String candidate,
      int pid,
      String token,
      boolean foreign) {

    /**
     * Nobody leads.
     *
     * @param nanos when
     * @param source where from
     * @param lagNanos its lag
     * @return the answer
     */
    public static Answer nobody(long nanos, String source, long lagNanos) {
      return new Answer(nanos, source, lagNanos, null, 0, null, false);
    }

    @Override
    public String toString() {
      String who =
          pid == 0
              ? "nobody"
              : foreign
                  ? "foreign pid " + pid
                  : "candidate " + candidate + " pid " + pid + " token " + token;
      return source + " said " + who;
    }
  }

  /**
   * A span in which a hostile session held the key.
   *
   * @param pid its backend pid
   * @param from when it was granted (at the latest)
   * @param to when it let go (at the earliest: its session's close returned)
   */
  public record ForeignHold(int pid, long from, long to) {}

  /**
   * A term: {@code lost} is its LOST, {@code end} the latest moment its session may hold the key.
   */
  private record Span(
      String member, String number, String token, int pid, long start, long lost, long end) {}

  private WhoLeadsChecker() {}

  /**
   * Judges every answer about one key.
   *
   * @param timeline the candidates' events about the key, by time (the member is the candidate id)
   * @param answers the sampled answers
   * @param hostilePids every backend pid of a hostile session during the run
   * @param holds when hostile sessions held the key
   * @param strucks per term ({@code member#number}), when a fault struck it: from then on its
   *     session may be gone before its LOST
   * @return one line per false answer, empty when every answer was true
   */
  public static List<String> check(
      List<TermChecker.Event> timeline,
      Collection<Answer> answers,
      Set<Integer> hostilePids,
      Collection<ForeignHold> holds,
      Map<String, Long> strucks) {
    return check(timeline, answers, hostilePids, holds, strucks, Map.of());
  }

  /**
   * Judges every answer about one key of a {@code LeaderGroup}, whose sessions hold many keys and
   * show only their newest token (the documented limit of a read from {@code pg_locks}): a token
   * that any term on the named session had, on any key, passes for a term of this key on that
   * session that was live then.
   *
   * @param timeline the candidates' events about the key, by time
   * @param answers the sampled answers
   * @param hostilePids every backend pid of a hostile session during the run
   * @param holds when hostile sessions held the key
   * @param strucks per term ({@code member#number}), when a fault struck it
   * @param sessionTokens per backend pid, the tokens of every term on that session, any key
   * @return one line per false answer, empty when every answer was true
   */
  public static List<String> check(
      List<TermChecker.Event> timeline,
      Collection<Answer> answers,
      Set<Integer> hostilePids,
      Collection<ForeignHold> holds,
      Map<String, Long> strucks,
      Map<Integer, Set<String>> sessionTokens) {
    List<Span> spans = spans(timeline, holds);
    List<String> out = new ArrayList<>();
    for (Answer a : answers) {
      String wrong = judge(a, spans, hostilePids, holds, strucks, sessionTokens);
      if (wrong != null) {
        out.add(
            String.format(
                Locale.ROOT, "FALSE WHO-LEADS at %.1f ms: %s: %s", a.nanos() / 1e6, a, wrong));
      }
    }
    return out;
  }

  private static String judge(
      Answer a,
      List<Span> spans,
      Set<Integer> hostilePids,
      Collection<ForeignHold> holds,
      Map<String, Long> strucks,
      Map<Integer, Set<String>> sessionTokens) {
    long t = a.nanos();
    long lag = a.lagNanos();
    if (a.pid() == 0) {
      for (Span s : spans) {
        long sureEnd =
            Math.min(s.lost(), strucks.getOrDefault(s.member() + "#" + s.number(), s.lost()));
        if (s.start() + lag <= t && plus(t, lag) < sureEnd) {
          return "while term " + s.member() + "#" + s.number() + " (pid " + s.pid() + ") was live";
        }
      }
      return null;
    }
    if (a.foreign()) {
      for (Span s : spans) {
        if (s.pid() == a.pid() && s.start() - lag <= t && t <= plus(s.end(), lag)) {
          return "a candidate's session (term "
              + s.member()
              + "#"
              + s.number()
              + ") shown as foreign";
        }
      }
      for (ForeignHold h : holds) {
        if (h.pid() == a.pid() && h.from() - lag <= t && t <= plus(h.to(), lag)) {
          return null;
        }
      }
      return "no hostile session held the key then";
    }
    if (hostilePids.contains(a.pid())) {
      return "a hostile session named as a candidate";
    }
    if (a.candidate() == null || a.candidate().isEmpty()) {
      // a session of the candidates' role whose name is no candidate's yet: only a term's own
      // session, around its grant (a POLL win takes the key before it names the session)
      for (Span s : spans) {
        if (s.pid() == a.pid() && s.start() - lag <= t && t <= plus(s.end(), lag)) {
          return null;
        }
      }
      return "a session of the candidates' role that is no term's";
    }
    if (a.token() == null) {
      // A session of the candidates' role named after a candidate, claiming no term: before its
      // token statement, or a closed WAIT standby's backend still queued when the key came free
      // (it holds the key until it notices its client is gone). It names no term.
      for (Span s : spans) {
        if (s.member().equals(a.candidate())) {
          return null;
        }
      }
      return "a session named after " + a.candidate() + ", which never led";
    }
    StringBuilder terms = new StringBuilder();
    for (Span s : spans) {
      if (!s.member().equals(a.candidate())) {
        continue;
      }
      terms.append(
          String.format(
              Locale.ROOT,
              " %s#%s (pid %d, token %s, %.1f to %s ms)",
              s.member(),
              s.number(),
              s.pid(),
              s.token(),
              s.start() / 1e6,
              s.end() == Long.MAX_VALUE
                  ? "open"
                  : String.format(Locale.ROOT, "%.1f", s.end() / 1e6)));
      if (s.pid() != a.pid()) {
        continue;
      }
      // The server grants the key with the term's token before the candidate reports the term
      // (by the lock-delay, when the previous end was not graceful): a session with this pid and
      // this token is that term from its grant on, and no token names two terms.
      if (s.token().equals(a.token()) && t <= plus(s.end(), lag)) {
        return null;
      }
      if (sessionTokens.getOrDefault(a.pid(), Set.of()).contains(a.token())
          && s.start() - lag <= t
          && t <= plus(s.end(), lag)) {
        return null; // a group session's newest token, while it held this key's term
      }
    }
    return "no such term was live then; terms of that candidate:" + terms;
  }

  private static long plus(long a, long b) {
    return a > Long.MAX_VALUE - b ? Long.MAX_VALUE : a + b;
  }

  /**
   * The terms of the key. A term's span ends at its LOST; one its client ended (a close, a yield, a
   * refresh that failed) holds the key until its release, after onLost, so its session may be named
   * holding the key until the key's next grant (another term's ACQUIRED, a hostile hold).
   */
  private static List<Span> spans(List<TermChecker.Event> timeline, Collection<ForeignHold> holds) {
    List<Span> spans = new ArrayList<>();
    for (TermChecker.Event e : timeline) {
      if (e.kind().equals("ACQUIRED")) {
        String number = e.fields().get(0);
        long end = Long.MAX_VALUE;
        long lost = Long.MAX_VALUE;
        for (TermChecker.Event l : timeline) {
          if (l.kind().equals("LOST")
              && l.member().equals(e.member())
              && l.fields().get(0).equals(number)
              && l.nanos() >= e.nanos()) {
            end = l.nanos();
            lost = l.nanos();
            if (CLIENT_ENDED.contains(l.fields().get(1))) {
              end = nextGrant(timeline, holds, e, l.nanos());
            }
            break;
          }
        }
        spans.add(
            new Span(
                e.member(),
                number,
                e.fields().get(1),
                Integer.parseInt(e.fields().get(2)),
                e.nanos(),
                lost,
                end));
      }
    }
    return spans;
  }

  private static long nextGrant(
      List<TermChecker.Event> timeline,
      Collection<ForeignHold> holds,
      TermChecker.Event acquired,
      long lost) {
    long next = Long.MAX_VALUE;
    for (TermChecker.Event o : timeline) {
      if (o.kind().equals("ACQUIRED") && o != acquired && o.nanos() > acquired.nanos()) {
        next = Math.min(next, o.nanos());
      }
    }
    for (ForeignHold h : holds) {
      if (h.from() > acquired.nanos()) {
        next = Math.min(next, h.from());
      }
    }
    return Math.max(lost, next);
  }
}
