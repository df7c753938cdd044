package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Objects;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Where candidates meet: the key of one PostgreSQL advisory lock.
 *
 * <p>PostgreSQL has two advisory keyspaces that never collide: one {@code bigint}, and a pair of
 * {@code int}s. Keys are built with:
 *
 * <ul>
 *   <li>{@link #of(int, int)}: an explicit two-part key, as the Retsu state collector uses;
 *   <li>{@link #of(long)}: an explicit {@code bigint} key;
 *   <li>{@link #named(String, String)}: a {@code bigint} derived from a name, the first 8 bytes of
 *       SHA-256 of the UTF-8 bytes of {@code "namespace:name"}, big-endian. Operators compute the
 *       same key in SQL with {@code ('x' || left(encode(sha256(convert_to('namespace:name',
 *       'UTF8')), 'hex'), 16))::bit(64)::bigint};
 *   <li>{@link #sqlxCompatible(String)}: the key that Rust's SQLx {@code PgAdvisoryLock::new}
 *       derives from the same string, so Java and Rust services contend for one lock.
 * </ul>
 *
 * <p>{@link #toString()} shows the key in hex and decimal, plus its name when it has one. Instances
 * are immutable and thread-safe; two keys are equal when PostgreSQL would treat them as one lock.
 */
public final class LockKey {

  private static final byte[] SQLX_INFO =
      "SQLx (Rust) Postgres advisory lock".getBytes(StandardCharsets.UTF_8);

  private final boolean pair;
  private final long value;
  private final int first;
  private final int second;
  private final String label;

  private LockKey(boolean pair, long value, int first, int second, String label) {
    this.pair = pair;
    this.value = value;
    this.first = first;
    this.second = second;
    this.label = label;
  }

  /**
   * Returns a two-part key, {@code pg_try_advisory_lock(first, second)}.
   *
   * @param first the first part (shows as {@code classid} in {@code pg_locks})
   * @param second the second part (shows as {@code objid})
   * @return the key
   */
  public static LockKey of(int first, int second) {
    return new LockKey(true, 0, first, second, null);
  }

  /**
   * Returns a {@code bigint} key, {@code pg_try_advisory_lock(value)}.
   *
   * @param value the key
   * @return the key
   */
  public static LockKey of(long value) {
    return new LockKey(false, value, 0, 0, null);
  }

  /**
   * Derives a {@code bigint} key from a namespace and a name: the first 8 bytes of SHA-256 of the
   * UTF-8 bytes of {@code namespace + ":" + name}, read as a big-endian signed long.
   *
   * @param namespace who owns the name, e.g. the service; not empty, without {@code ':'}
   * @param name the job, e.g. {@code "queue-state-collector"}; not empty
   * @return the key
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is empty, or the namespace contains {@code ':'}
   */
  public static LockKey named(String namespace, String name) {
    Objects.requireNonNull(namespace, "namespace");
    Objects.requireNonNull(name, "name");
    if (namespace.isEmpty()) {
      throw new IllegalArgumentException("namespace must not be empty");
    }
    if (namespace.indexOf(':') >= 0) {
      throw new IllegalArgumentException(
          "namespace must not contain ':' (it separates namespace and name), but was \""
              + Checks.shorten(namespace)
              + "\"");
    }
    if (name.isEmpty()) {
      throw new IllegalArgumentException("name must not be empty");
    }
    String label = namespace + ":" + name;
    byte[] digest = sha256(label.getBytes(StandardCharsets.UTF_8));
    long value = ByteBuffer.wrap(digest, 0, 8).order(ByteOrder.BIG_ENDIAN).getLong();
    return new LockKey(false, value, 0, 0, label);
  }

  /**
   * Derives the {@code bigint} key that SQLx's {@code PgAdvisoryLock::new(name)} uses: HKDF-SHA256
   * with no salt, the UTF-8 bytes of the name as input key material, info {@code "SQLx (Rust)
   * Postgres advisory lock"}, 8 bytes of output read as a little-endian signed long.
   *
   * @param name the lock name as given to SQLx; not empty
   * @return the key
   */
  public static LockKey sqlxCompatible(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isEmpty()) {
      throw new IllegalArgumentException("name must not be empty");
    }
    try {
      Mac extract = Mac.getInstance("HmacSHA256");
      extract.init(new SecretKeySpec(new byte[32], "HmacSHA256"));
      byte[] prk = extract.doFinal(name.getBytes(StandardCharsets.UTF_8));
      Mac expand = Mac.getInstance("HmacSHA256");
      expand.init(new SecretKeySpec(prk, "HmacSHA256"));
      expand.update(SQLX_INFO);
      expand.update((byte) 1);
      byte[] okm = expand.doFinal();
      long value = ByteBuffer.wrap(okm, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
      return new LockKey(false, value, 0, 0, "sqlx:" + name);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }

  /**
   * Returns whether this is a two-part {@code (int, int)} key.
   *
   * @return true for {@link #of(int, int)} keys
   */
  public boolean isTwoPart() {
    return pair;
  }

  /**
   * Returns the {@code bigint} value of this key.
   *
   * @return the value
   * @throws IllegalStateException for a two-part key
   */
  public long value() {
    if (pair) {
      throw new IllegalStateException("a two-part key has no bigint value: " + this);
    }
    return value;
  }

  /**
   * Returns the first part of a two-part key.
   *
   * @return the first part
   * @throws IllegalStateException for a {@code bigint} key
   */
  public int first() {
    if (!pair) {
      throw new IllegalStateException("a bigint key has no parts: " + this);
    }
    return first;
  }

  /**
   * Returns the second part of a two-part key.
   *
   * @return the second part
   * @throws IllegalStateException for a {@code bigint} key
   */
  public int second() {
    if (!pair) {
      throw new IllegalStateException("a bigint key has no parts: " + this);
    }
    return second;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof LockKey)) {
      return false;
    }
    LockKey other = (LockKey) o;
    return pair == other.pair
        && value == other.value
        && first == other.first
        && second == other.second;
  }

  @Override
  public int hashCode() {
    return pair ? Objects.hash(true, first, second) : Long.hashCode(value);
  }

  /**
   * Shows the key in hex and decimal, e.g. {@code 0x0a1b2c3d4e5f6071 (728091226745823345)} or
   * {@code (0x0000002a, 0x00000007) = (42, 7)}, prefixed with the name it was derived from.
   *
   * @return the key for people
   */
  @Override
  public String toString() {
    String text =
        pair
            ? String.format("(0x%08x, 0x%08x) = (%d, %d)", first, second, first, second)
            : String.format("0x%016x (%d)", value, value);
    return label == null ? text : Checks.shorten(label) + " " + text;
  }

  private static byte[] sha256(byte[] input) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(input);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
