package dev.retsu.lock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class QueueStateSnapshotTest {

  @Test
  void keepsTheQueuesInTheGivenOrderAndCopiesThem() {
    List<QueueState> queues = new ArrayList<>();
    queues.add(new QueueState("b", 1, 2, 3, 4, 5.5));
    queues.add(new QueueState("a", 0, 0, 0, 0, 0));

    QueueStateSnapshot s = QueueStateSnapshot.of(queues, Duration.ofMillis(7));
    queues.clear();

    assertThat(s.queues()).extracting(QueueState::name).containsExactly("b", "a");
    assertThat(s.collectionDuration()).isEqualTo(Duration.ofMillis(7));
    assertThatThrownBy(() -> s.queues().clear()).isInstanceOf(UnsupportedOperationException.class);
    assertThat(QueueStateSnapshot.builder().build().queues()).isEmpty();
    assertThat(QueueStateSnapshot.builder().build().collectionDuration()).isEqualTo(Duration.ZERO);
  }

  @Test
  void rejectsNegativeCountsNamingTheQueueAndTheValue() {
    assertThatThrownBy(() -> new QueueState("orders", -1, 0, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ready of queue \"orders\" must not be negative, but was -1");
    assertThatThrownBy(() -> new QueueState("orders", 0, -2, 0, 0, 0))
        .hasMessage("inFlight of queue \"orders\" must not be negative, but was -2");
    assertThatThrownBy(() -> new QueueState("orders", 0, 0, -3, 0, 0))
        .hasMessage("scheduled of queue \"orders\" must not be negative, but was -3");
    assertThatThrownBy(() -> QueueStateSnapshot.builder().queue("orders", 0, 0, 0, -4, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("dead of queue \"orders\" must not be negative, but was -4");
  }

  @Test
  void rejectsAgesThatAreNegativeOrNotFinite() {
    assertThatThrownBy(() -> new QueueState("orders", 0, 0, 0, 0, -0.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "oldestReadyAgeSeconds of queue \"orders\" must be a finite number >= 0, but was -0.5");
    assertThatThrownBy(() -> new QueueState("orders", 0, 0, 0, 0, Double.NaN))
        .hasMessageEndingWith("but was NaN");
    assertThatThrownBy(() -> new QueueState("orders", 0, 0, 0, 0, Double.POSITIVE_INFINITY))
        .hasMessageEndingWith("but was Infinity");
  }

  @Test
  void rejectsNullEmptyAndDuplicateNames() {
    assertThatThrownBy(() -> new QueueState(null, 0, 0, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("queue name must not be null");
    assertThatThrownBy(() -> new QueueState("", 0, 0, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("queue name must not be empty");
    assertThatThrownBy(
            () ->
                QueueStateSnapshot.builder()
                    .queue("orders", 1, 0, 0, 0, 0)
                    .queue("emails", 1, 0, 0, 0, 0)
                    .queue("orders", 2, 0, 0, 0, 0)
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("queue names must be unique, but \"orders\" appears twice");
    assertThatThrownBy(
            () ->
                QueueStateSnapshot.of(
                    Arrays.asList(new QueueState("a", 0, 0, 0, 0, 0), null), Duration.ZERO))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("queues[1]");
  }

  @Test
  void rejectsANegativeOrMissingDuration() {
    assertThatThrownBy(() -> QueueStateSnapshot.of(List.of(), Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("collectionDuration must not be negative, but was PT-1S");
    assertThatThrownBy(() -> QueueStateSnapshot.of(List.of(), null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("collectionDuration");
  }

  @Test
  void longNamesAreShortenedInMessages() {
    String longName = "q".repeat(500);
    assertThatThrownBy(() -> new QueueState(longName, -1, 0, 0, 0, 0))
        .hasMessageContaining("...(500 chars)")
        .hasMessageEndingWith("but was -1");
  }

  @Test
  void theBacklogIsEveryMessageTheQueueHoldsCappedAtLongMax() {
    assertThat(new QueueState("a", 1, 2, 3, 4, 0).backlog()).isEqualTo(10);
    assertThat(new QueueState("a", Long.MAX_VALUE, 1, 0, 0, 0).backlog()).isEqualTo(Long.MAX_VALUE);
  }
}
