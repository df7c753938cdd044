package dev.retsu.lock.fakes;

import dev.retsu.lock.LockKey;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one key allocator of the tests: every call returns a key no other test in this JVM uses. Each
 * test class also gets its own database, and advisory locks are per database.
 */
public final class TestKeys {

  private static final AtomicLong NEXT = new AtomicLong(7_000_000);

  private TestKeys() {}

  /**
   * A fresh key.
   *
   * @return a key no other test in this JVM uses
   */
  public static LockKey next() {
    return LockKey.of(nextValue());
  }

  /**
   * A fresh bigint key value, for candidates in child JVMs.
   *
   * @return a value no other test in this JVM uses
   */
  public static long nextValue() {
    return NEXT.incrementAndGet();
  }

  /** The parameters of {@link LockKey#pgLocksPredicate(String)} for {@code key}. */
  public static Object[] lockArguments(LockKey key) {
    return key.isTwoPart()
        ? new Object[] {key.first(), key.second()}
        : new Object[] {key.value(), key.value()};
  }

  /** The key as literal arguments of the advisory lock functions. */
  public static String sqlLiteral(LockKey key) {
    return key.isTwoPart() ? key.first() + ", " + key.second() : key.value() + "::int8";
  }
}
