package dev.retsu.lock.internal.term;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import kotlin.Unit;
import kotlin.reflect.KFunction;
import kotlin.reflect.jvm.ReflectJvmMapping;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.DSLScenarioBuilder;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * The listener contract of a term's end under every interleaving the model checker can build, not
 * only those a suite happens to run: whatever threads end the term at once (the session lost, a
 * yield, the worker's own finish) and whenever {@code onAcquired} is delivered, {@code onLost}
 * comes at most once, only after {@code onAcquired}, and always with the reason (and cause) of the
 * one claim that ended the term. Each operation is what one thread of the engine does: {@link
 * TermEnd#endTerm} and {@link TermEnd#endSession} claim, the worker announces, and {@link
 * TermFinish#finishSession} claims with its fallback reason, then tells the listeners if it is the
 * one finishing.
 *
 * <p>The term's state machine touches neither its session nor its worker in these operations, so
 * the state is built without them: no database and nothing standing in for one.
 */
public class TermEndInterleavingsTest {

  private static final Throwable LOST = new IllegalStateException("the server ended the session");

  private final List<String> events = new ArrayList<>();
  private final AtomicBoolean announcing = new AtomicBoolean();
  private final AtomicReference<LossReason> winner = new AtomicReference<>();
  private final TermListeners listeners =
      new TermListeners(
          List.of(
              new LeaderListener() {
                @Override
                public void onAcquired(Term term) {
                  events.add("acquired");
                }

                @Override
                public void onLost(Term term, LossReason reason, Throwable cause) {
                  events.add("lost " + reason + (cause == null ? "" : " " + cause.getMessage()));
                }
              }),
          "[interleavings]");
  private final TermState state =
      new TermState(
          new Term(1, LockKey.of(42), "a", Instant.EPOCH, new FencingToken(1, 0, 761), 7),
          null,
          null);

  /** A session-lost end, as {@code endSession} or {@code endTerm} makes from any thread. */
  @Operation
  public void loseSession() {
    claim(LossReason.SESSION_LOST, LOST);
  }

  /** A yield, as {@code LeaderLoop.yield} makes from a user's thread. */
  @Operation
  public void yieldTerm() {
    claim(LossReason.YIELDED, null);
  }

  /** The worker's announcement after the grant: once per term, as the worker makes it. */
  @Operation
  public void announce() {
    if (announcing.compareAndSet(false, true)) {
      listeners.acquired(state);
    }
  }

  /** {@code finishSession}: claim with the fallback reason, then tell listeners if first. */
  @Operation
  public void finish() {
    claim(LossReason.CLOSED, null);
    if (state.startFinishing()) {
      listeners.lost(state);
    }
  }

  private void claim(LossReason why, Throwable cause) {
    if (state.claim(why, cause)) {
      winner.set(why);
    }
  }

  /** After each interleaving: the events a listener saw keep the contract. */
  @Validate
  public void listenerContract() {
    int lost = 0;
    boolean acquired = false;
    for (String e : events) {
      if (e.equals("acquired")) {
        if (acquired || lost > 0) {
          throw new AssertionError("onAcquired out of order: " + events);
        }
        acquired = true;
      } else {
        lost++;
        if (!acquired || lost > 1) {
          throw new AssertionError("onLost without onAcquired, or twice: " + events);
        }
        if (!e.startsWith("lost " + winner.get())) {
          throw new AssertionError(
              "onLost without the reason of the claim that ended the term ("
                  + winner.get()
                  + "): "
                  + events);
        }
        boolean sessionLost = e.startsWith("lost " + LossReason.SESSION_LOST);
        if (sessionLost != e.endsWith(LOST.getMessage())) {
          throw new AssertionError("onLost with another claim's cause: " + events);
        }
      }
    }
  }

  /**
   * The model checker explores every interleaving of each scenario below (and of random ones): a
   * term announced, then ended by two threads at once, or announced while it ends.
   */
  @Test
  void everyInterleavingKeepsTheListenerContract() {
    new ModelCheckingOptions()
        .addCustomScenario(scenario(List.of("announce"), List.of("loseSession"), List.of("finish")))
        .addCustomScenario(scenario(List.of("announce"), List.of("yieldTerm"), List.of("finish")))
        .addCustomScenario(
            scenario(List.of(), List.of("announce", "finish"), List.of("loseSession")))
        .addCustomScenario(
            scenario(List.of("announce"), List.of("loseSession", "finish"), List.of("finish")))
        .threads(3)
        .actorsPerThread(1)
        .iterations(3)
        .invocationsPerIteration(500)
        .check(TermEndInterleavingsTest.class);
  }

  @Test
  void stressedEndsKeepTheListenerContract() {
    new StressOptions()
        .threads(3)
        .actorsPerThread(2)
        .iterations(5)
        .invocationsPerIteration(1_000)
        .check(TermEndInterleavingsTest.class);
  }

  /** A scenario: {@code initial} on one thread, then each other list on a thread of its own. */
  @SafeVarargs
  private static ExecutionScenario scenario(List<String> initial, List<String>... threads) {
    DSLScenarioBuilder b = new DSLScenarioBuilder();
    b.initial(
        t -> {
          initial.forEach(name -> t.actor(operation(name)));
          return Unit.INSTANCE;
        });
    b.parallel(
        p -> {
          for (List<String> ops : threads) {
            p.thread(
                t -> {
                  ops.forEach(name -> t.actor(operation(name)));
                  return Unit.INSTANCE;
                });
          }
          return Unit.INSTANCE;
        });
    return b.buildScenario();
  }

  private static KFunction<?> operation(String name) {
    try {
      return ReflectJvmMapping.getKotlinFunction(TermEndInterleavingsTest.class.getMethod(name));
    } catch (NoSuchMethodException e) {
      throw new IllegalArgumentException("no operation " + name, e);
    }
  }
}
