package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.WhoLeadsChecker.Answer;
import dev.retsu.lock.testing.WhoLeadsChecker.ForeignHold;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The "who leads" check on made-up timelines: it must fail on every false answer. */
class WhoLeadsCheckerTest {

  private static final long MS = 1_000_000L;
  private static final long LAG = 50 * MS;

  private final List<TermChecker.Event> timeline = new ArrayList<>();

  private void at(long ms, String member, String kind, String... fields) {
    timeline.add(new TermChecker.Event(ms * MS, member, kind, List.of(fields)));
  }

  /** a leads 0-300 ms (pid 100), b from 320 ms (pid 101); mallory (pid 666) held 400-500 ms. */
  private void handOver() {
    at(0, "a", "ACQUIRED", "1", "A1A0B10", "100");
    at(300, "a", "LOST", "1", "CLOSED");
    at(320, "b", "ACQUIRED", "1", "A1A0B11", "101");
  }

  private static Answer named(long ms, String candidate, int pid, String token) {
    return new Answer(ms * MS, "info", LAG, candidate, pid, token, false);
  }

  private List<String> check(Answer... answers) {
    return WhoLeadsChecker.check(
        timeline,
        List.of(answers),
        Set.of(666),
        List.of(new ForeignHold(666, 400 * MS, 500 * MS)),
        Map.of());
  }

  @Test
  void trueAnswersPass() {
    handOver();
    assertThat(
            check(
                named(100, "a", 100, "A1A0B10"),
                named(340, "a", 100, "A1A0B10"), // within the lag after a's end
                Answer.nobody(310 * MS, "watch", LAG),
                named(330, "b", 101, "A1A0B11"),
                named(310, "b", 101, "A1A0B11"), // granted before its onAcquired
                named(305, "b", 101, null), // its session before the token statement
                named(300, "", 101, null), // its session before it is named
                new Answer(450 * MS, "info", LAG, null, 666, null, true)))
        .isEmpty();
  }

  @Test
  void aHostileSessionNamedAsACandidateFails() {
    handOver();
    assertThat(check(named(100, "mallory", 666, "J2147483647A0S9223372036854775807")))
        .singleElement()
        .asString()
        .contains("FALSE WHO-LEADS")
        .contains("a hostile session named as a candidate");
  }

  @Test
  void aDeadTermNamedLongAfterItsEndFails() {
    handOver();
    assertThat(check(named(600, "a", 100, "A1A0B10")))
        .singleElement()
        .asString()
        .contains("no such term was live then");
  }

  @Test
  void aTermItsClientEndedIsTheHolderUntilTheNextGrant() {
    at(0, "a", "ACQUIRED", "1", "A1A0B10", "100");
    at(100, "a", "LOST", "1", "CLOSED"); // onLost runs before the release
    at(900, "b", "ACQUIRED", "1", "A1A0B11", "101");
    assertThat(check(named(380, "a", 100, "A1A0B10"))).isEmpty(); // mallory is granted at 400
    assertThat(check(Answer.nobody(380 * MS, "info", LAG))).isEmpty(); // released after onLost
    assertThat(check(named(1000, "a", 100, "A1A0B10")))
        .singleElement()
        .asString()
        .contains("no such term was live then");
  }

  @Test
  void aWrongTokenFails() {
    handOver();
    assertThat(check(named(100, "a", 100, "A1A0B11"))).hasSize(1);
  }

  @Test
  void nobodyWhileATermIsSurelyLiveFails() {
    handOver();
    assertThat(check(Answer.nobody(200 * MS, "watch", LAG)))
        .singleElement()
        .asString()
        .contains("while term a#1");
  }

  @Test
  void nobodyAfterAFaultStruckTheTermPasses() {
    handOver();
    List<String> found =
        WhoLeadsChecker.check(
            timeline,
            List.of(Answer.nobody(200 * MS, "watch", LAG)),
            Set.of(),
            List.of(),
            Map.of("a#1", 150 * MS));
    assertThat(found).isEmpty();
  }

  @Test
  void aCandidateShownAsForeignFails() {
    handOver();
    assertThat(check(new Answer(100 * MS, "info", LAG, null, 100, null, true)))
        .singleElement()
        .asString()
        .contains("shown as foreign");
  }

  @Test
  void aForeignHolderThatHeldNothingFails() {
    handOver();
    assertThat(check(new Answer(100 * MS, "info", LAG, null, 666, null, true)))
        .singleElement()
        .asString()
        .contains("no hostile session held the key then");
  }
}
