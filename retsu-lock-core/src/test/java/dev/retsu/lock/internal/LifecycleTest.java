package dev.retsu.lock.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class LifecycleTest {

  @Test
  void theEndCompletesWhenClosedAndEveryCallerHasItsOwnCopy() {
    Lifecycle l = new Lifecycle();
    l.start("A recipe runs once", "[test]");
    CompletableFuture<Void> mine = l.ended();
    CompletableFuture<Void> yours = l.ended();
    mine.complete(null);
    assertThat(yours).isNotDone();
    assertThat(l.phase()).isEqualTo(Lifecycle.Phase.RUNNING);

    l.close();

    assertThat(yours).isCompleted();
    assertThat(l.ended()).isCompleted();
  }

  @Test
  void theEndCompletesExceptionallyWithTheFailureAndACloseAfterItChangesNothing() {
    Lifecycle l = new Lifecycle();
    l.start("A recipe runs once", "[test]");
    CompletableFuture<Void> end = l.ended();
    IllegalStateException cause = new IllegalStateException("pooler");

    l.fail(cause);
    l.close();

    assertThat(l.phase()).isEqualTo(Lifecycle.Phase.FAILED);
    assertThat(end).isCompletedExceptionally(); // fails at once, where a join would hang
    assertThatThrownBy(end::join).isInstanceOf(CompletionException.class).hasCause(cause);
  }

  @Test
  void aRecipeClosedBeforeItStartedHasEnded() {
    Lifecycle l = new Lifecycle();
    l.close();
    assertThat(l.ended()).isCompleted();
  }
}
