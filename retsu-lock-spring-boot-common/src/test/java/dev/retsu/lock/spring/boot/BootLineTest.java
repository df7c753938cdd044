package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retsu.lock.spring.boot.internal.BootLine;
import dev.retsu.lock.spring.boot.internal.WrongBootLineFailureAnalyzer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * The start-up check of each Boot line's module: the right line passes, a wrong one names the fix.
 */
class BootLineTest {

  @Test
  void theWrongStarterFailsStartupWithTheOneLineFix() {
    assertThatThrownBy(() -> BootLine.require(4, 0, "3.5.0"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "retsu-lock-spring-boot4-starter is for Spring Boot 4.0 and later 4.x, but this"
                + " application runs Spring Boot 3.5.0: use retsu-lock-spring-boot3-starter"
                + " instead of retsu-lock-spring-boot4-starter (same version; with both starters"
                + " on the class path, remove one)");
    assertThatThrownBy(() -> BootLine.require(3, 5, "4.1.2"))
        .hasMessageContaining(
            "runs Spring Boot 4.1.2: use retsu-lock-spring-boot4-starter instead of"
                + " retsu-lock-spring-boot3-starter");
    assertThatThrownBy(() -> BootLine.require(3, 5, "3.4.9"))
        .hasMessageContaining("runs Spring Boot 3.4.9: upgrade to Spring Boot 3.5 or later");
    assertThatThrownBy(() -> BootLine.require(4, 0, "3.4.9"))
        .hasMessageContaining("runs Spring Boot 3.4.9: upgrade to Spring Boot 3.5 or later")
        .hasMessageNotContaining("instead of");
    assertThatThrownBy(() -> BootLine.require(4, 0, "5.0.0"))
        .hasMessageEndingWith(
            "runs Spring Boot 5.0.0: Spring Boot 5 is not supported by this retsu-lock version (it"
                + " supports 3.5 and 4.x)");
    assertThatThrownBy(() -> BootLine.require(3, 5, "5.0.0")).hasMessageNotContaining("instead of");
    assertThatThrownBy(() -> BootLine.require(4, 0, null)).hasMessageContaining("Boot unknown");
  }

  @Test
  void theRightLinePassesFromItsLeastMinorOn() {
    assertThatCode(() -> BootLine.require(4, 0, "4.0.7")).doesNotThrowAnyException();
    assertThatCode(() -> BootLine.require(4, 0, "4.1.2")).doesNotThrowAnyException();
    assertThatCode(() -> BootLine.require(3, 5, "3.5.0")).doesNotThrowAnyException();
    assertThatCode(() -> BootLine.require(3, 5, "3.5.7-SNAPSHOT")).doesNotThrowAnyException();
  }

  @Test
  void springBootsStartupReportPrintsTheFixAsItsAction() {
    Throwable wrongLine = catchThrowable(() -> BootLine.require(4, 0, "3.5.0"));
    Throwable asSpringThrowsIt =
        new BeanCreationException("retsuLockBootLineCheck", "Factory method threw", wrongLine);
    FailureAnalysis analysis = new WrongBootLineFailureAnalyzer().analyze(asSpringThrowsIt);
    assertThat(analysis.getDescription())
        .isEqualTo(
            "retsu-lock-spring-boot4-starter is for Spring Boot 4.0 and later 4.x, but this"
                + " application runs Spring Boot 3.5.0.");
    assertThat(analysis.getAction())
        .isEqualTo(
            "Use retsu-lock-spring-boot3-starter instead of retsu-lock-spring-boot4-starter (same"
                + " version; with both starters on the class path, remove one).");
    assertThat(new WrongBootLineFailureAnalyzer().analyze(new IllegalStateException("other")))
        .isNull();
    assertThat(
            SpringFactoriesLoader.forDefaultResourceLocation()
                .load(
                    FailureAnalyzer.class,
                    null,
                    // the other analyzers on this class path want constructor arguments
                    (type, name, failure) -> {}))
        .as("registered in META-INF/spring.factories, where Spring Boot looks")
        .anyMatch(WrongBootLineFailureAnalyzer.class::isInstance);
  }
}
