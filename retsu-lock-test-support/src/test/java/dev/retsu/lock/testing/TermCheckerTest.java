package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The checker itself, on made-up timelines: it must fail where two candidates act at once. */
class TermCheckerTest {

  private static final long MS = 1_000_000L;

  private final List<TermChecker.Event> timeline = new ArrayList<>();

  private void at(long ms, String member, String kind, String... fields) {
    timeline.add(new TermChecker.Event(ms * MS, member, kind, List.of(fields)));
  }

  /** a leads term 1 and is hit by a server-side fault at 100 ms; b takes over at 120 ms. */
  private List<TermChecker.Injection> takeover() {
    at(0, "a", "ACQUIRED", "1", "A1A0B10", "100");
    at(50, "a", "CHECK", "1", "A1A0B10");
    at(80, "a", "EFFECT", "1", "A1A0B10");
    at(120, "b", "ACQUIRED", "1", "A1A0B11", "101");
    at(200, "b", "CHECK", "1", "A1A0B11");
    at(220, "b", "EFFECT", "1", "A1A0B11");
    at(300, "b", "LOST", "1", "CLOSED");
    return List.of(new TermChecker.Injection(1, "a", "1", 100 * MS, true, "kill-9@BETWEEN"));
  }

  @Test
  void cleanTakeoverPasses() {
    List<TermChecker.Injection> faults = takeover();
    TermChecker.Result r = TermChecker.analyse(timeline, Set.of("a"), faults);
    assertThat(r.violations()).isEmpty();
    assertThat(r.residualNanos()).isZero();
    assertThat(r.aftermath().get(0).checkAfterFaultNanos()).isZero();
  }

  @Test
  void checkOfTheOldTermAfterTheNewTermStartedFails() {
    List<TermChecker.Injection> faults = takeover();
    at(150, "a", "CHECK", "1", "A1A0B10"); // ensureLeader() passed 30 ms after b's ACQUIRED
    at(170, "a", "EFFECT", "1", "A1A0B10");
    at(180, "a", "LOST", "1", "SESSION_LOST");
    TermChecker.Result r = TermChecker.analyse(sorted(), Set.of(), faults);
    assertThat(r.violations())
        .singleElement()
        .asString()
        .contains("CHECK AFTER A NEWER TERM STARTED")
        .contains("a#1")
        .contains("b#1")
        .contains("30.0 ms");
    assertThat(r.residualNanos()).isEqualTo(50 * MS);
    assertThat(r.aftermath().get(0).checkAfterFaultNanos()).isEqualTo(50 * MS);
  }

  @Test
  void aFaultWithAnAllowanceToleratesLateChecksWithinItAndFlagsTheFirstBeyond() {
    at(0, "a", "ACQUIRED", "1", "A1A0B10", "100");
    at(120, "b", "ACQUIRED", "1", "A1A0B11", "101");
    at(150, "a", "CHECK", "1", "A1A0B10"); // 50 ms after the fault: within its 80 ms allowance
    at(190, "a", "CHECK", "1", "A1A0B10"); // 90 ms after: beyond it
    at(200, "a", "LOST", "1", "LOCK_NOT_HELD");
    at(300, "b", "LOST", "1", "CLOSED");
    List<TermChecker.Injection> faults =
        List.of(
            new TermChecker.Injection(1, "a", "1", 100 * MS, true, "unlock-function@PRE", 80 * MS));
    TermChecker.Result r = TermChecker.analyse(timeline, Set.of(), faults);
    assertThat(r.violations())
        .singleElement()
        .asString()
        .contains("CHECK AFTER A NEWER TERM STARTED")
        .contains("70.0 ms") // the first one beyond the allowance, 70 ms after b began
        .contains("1 such check(s)");
    timeline.remove(3);
    assertThat(TermChecker.analyse(timeline, Set.of(), faults).violations()).isEmpty();
  }

  @Test
  void effectAfterTheNextTermOfALockOnlyTheLibraryReleasesFails() {
    at(0, "a", "ACQUIRED", "1", "A1A0B10", "100");
    at(50, "a", "CHECK", "1", "A1A0B10");
    at(60, "a", "LOST", "1", "CLOSED"); // a graceful close while the task runs
    at(90, "b", "ACQUIRED", "1", "A1A0B11", "101");
    at(110, "a", "EFFECT", "1", "A1A0B10");
    at(200, "b", "LOST", "1", "CLOSED");
    List<TermChecker.Injection> faults =
        List.of(new TermChecker.Injection(1, "a", "1", 55 * MS, false, "graceful-close@POST"));
    TermChecker.Result r = TermChecker.analyse(timeline, Set.of(), faults);
    assertThat(r.violations())
        .singleElement()
        .asString()
        .contains("RELEASED WHILE ACTING")
        .contains("20.0 ms");
  }

  @Test
  void sameOverlapAfterAServerSideFaultIsOnlyTheResidualWindow() {
    List<TermChecker.Injection> faults = takeover();
    at(
        130, "a", "EFFECT", "1",
        "A1A0B10"); // checked at 50 ms, before the fault: no library can stop it
    TermChecker.Result r = TermChecker.analyse(sorted(), Set.of("a"), faults);
    assertThat(r.violations()).isEmpty();
    assertThat(r.residualNanos()).isEqualTo(10 * MS);
  }

  @Test
  void tokensMustIncreaseAndTermsMustEndWithAReason() {
    at(0, "a", "ACQUIRED", "1", "A1A0B10", "100");
    at(10, "a", "LOST", "1", "CLOSED");
    at(20, "b", "ACQUIRED", "1", "A1A0A9", "101");
    TermChecker.Result r = TermChecker.analyse(timeline, Set.of(), List.of());
    assertThat(r.violations())
        .anyMatch(v -> v.startsWith("token did not increase"))
        .anyMatch(v -> v.contains("ended without a reason"));
  }

  @Test
  void eachKeyIsCheckedOnItsOwnAndViolationsNameTheKeyAndTheMoment() {
    Map<String, List<TermChecker.Event>> byKey = new LinkedHashMap<>();
    // key 1: a's term ends gracefully at 60 ms, then b takes it: safe
    byKey.put(
        "k1",
        List.of(
            new TermChecker.Event(90 * MS, "b", "ACQUIRED", List.of("1", "A1A0B12")),
            new TermChecker.Event(0, "a", "ACQUIRED", List.of("1", "A1A0B10")),
            new TermChecker.Event(50 * MS, "a", "CHECK", List.of("1")),
            new TermChecker.Event(60 * MS, "a", "LOST", List.of("1", "CLOSED")),
            new TermChecker.Event(200 * MS, "b", "LOST", List.of("1", "CLOSED"))));
    // key 2: a, killed, still passes a check after b's term started: never allowed
    byKey.put(
        "k2",
        List.of(
            new TermChecker.Event(0, "a", "ACQUIRED", List.of("1", "A1A0B10")),
            new TermChecker.Event(100 * MS, "b", "ACQUIRED", List.of("1", "A1A0B11")),
            new TermChecker.Event(130 * MS, "a", "CHECK", List.of("1")),
            new TermChecker.Event(200 * MS, "b", "LOST", List.of("1", "CLOSED"))));

    List<TermChecker.Violation> found =
        TermChecker.analyseEach(byKey, Set.of("a"), (key, e) -> e.member().equals("a"));

    assertThat(found)
        .singleElement()
        .satisfies(
            v -> {
              assertThat(v.text()).startsWith("k2: CHECK AFTER A NEWER TERM STARTED");
              assertThat(v.nanos()).isEqualTo(130 * MS);
            });
  }

  private List<TermChecker.Event> sorted() {
    List<TermChecker.Event> copy = new ArrayList<>(timeline);
    copy.sort(java.util.Comparator.comparingLong(TermChecker.Event::nanos));
    return copy;
  }
}
