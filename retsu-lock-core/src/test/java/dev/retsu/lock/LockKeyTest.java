package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LockKeyTest {

  @Test
  void sqlxDerivationMatchesSqlxDocumentedExample() {
    // From the SQLx docs of PgAdvisoryLock::new.
    LockKey key = LockKey.sqlxCompatible("my first Postgres advisory lock!");
    assertThat(key.value()).isEqualTo(-5560419505042474287L);
    assertThat(key.isTwoPart()).isFalse();
  }

  @Test
  void namedKeyIsFirstEightBytesOfSha256BigEndian() {
    // sha256("retsu:queue-state-collector") starts with these bytes; cross-checked against
    // PostgreSQL's sha256() in AdvisoryLockIntegrationTest.
    LockKey key = LockKey.named("retsu", "queue-state-collector");
    assertThat(key).isEqualTo(LockKey.of(key.value()));
    assertThat(LockKey.named("retsu", "queue-state-collector")).isEqualTo(key);
    assertThat(LockKey.named("retsu", "other")).isNotEqualTo(key);
    // sha256("a:bc") = c140f47475217ae9..., computed independently with Python hashlib.
    assertThat(LockKey.named("a", "bc").value()).isEqualTo(0xc140f47475217ae9L);
  }

  @Test
  void twoPartAndBigintKeysAreDifferentLocks() {
    assertThat(LockKey.of(0, 7)).isNotEqualTo(LockKey.of(7L));
    assertThat(LockKey.of(42, 7)).isEqualTo(LockKey.of(42, 7)).hasSameHashCodeAs(LockKey.of(42, 7));
    assertThat(LockKey.of(42, 7).first()).isEqualTo(42);
    assertThat(LockKey.of(42, 7).second()).isEqualTo(7);
  }

  @Test
  void printsHexAndDecimal() {
    assertThat(LockKey.of(1311768467463790320L))
        .hasToString("0x123456789abcdef0 (1311768467463790320)");
    assertThat(LockKey.of(-1L)).hasToString("0xffffffffffffffff (-1)");
    assertThat(LockKey.of(42, -5)).hasToString("(0x0000002a, 0xfffffffb) = (42, -5)");
    assertThat(LockKey.sqlxCompatible("my first Postgres advisory lock!"))
        .hasToString(
            "sqlx:my first Postgres advisory lock! 0xb2d56beba7ca3ad1 (-5560419505042474287)");
    assertThat(LockKey.named("a", "bc"))
        .hasToString("a:bc 0xc140f47475217ae9 (-4521345244861465879)");
  }

  @Test
  void rejectsBadNames() {
    assertThatThrownBy(() -> LockKey.named(null, "x"))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("namespace");
    assertThatThrownBy(() -> LockKey.named("ns", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("name");
    assertThatThrownBy(() -> LockKey.named("", "x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("namespace must not be empty");
    assertThatThrownBy(() -> LockKey.named("ns", ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("name must not be empty");
    assertThatThrownBy(() -> LockKey.named("a:b", "c"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "namespace must not contain ':' (it separates namespace and name), but was \"a:b\"");
    assertThatThrownBy(() -> LockKey.sqlxCompatible(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("name must not be empty");
  }

  @Test
  void longAndControlCharacterNamesStayReadable() {
    String huge = "x".repeat(100_000) + "\u0000";
    LockKey key = LockKey.named("ns", huge);
    assertThat(key.toString()).hasSizeLessThan(200).contains("...(100004 chars)");
    assertThat(LockKey.named("ns", "a\u0000b").toString()).startsWith("ns:a\\u0000b 0x");
  }

  @Test
  void partsAndValueAreGuardedByKind() {
    assertThatThrownBy(() -> LockKey.of(1, 2).value()).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> LockKey.of(1L).first()).isInstanceOf(IllegalStateException.class);
  }
}
