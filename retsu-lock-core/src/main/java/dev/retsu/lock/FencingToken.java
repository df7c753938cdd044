package dev.retsu.lock;

import java.util.Objects;

/**
 * A value that grows with every term on one PostgreSQL cluster, so that systems a leader writes to
 * can reject a stale leader: accept a write only if its token is not smaller than the largest seen.
 *
 * <p>It is three numbers taken in the leader's own session by the statement that starts the term:
 *
 * <ol>
 *   <li>the WAL <b>timeline</b>, which grows on every promotion: it orders tokens across a failover
 *       to a replica whose counters may lag;
 *   <li>the <b>redo</b> position of the server's latest checkpoint, in bytes of WAL ({@code
 *       pg_control_checkpoint()}), which only grows while the server runs and grows past every
 *       position read before a crash when crash recovery ends (its end-of-recovery checkpoint);
 *   <li>the term's 64-bit transaction id (<b>xid</b>, {@code pg_current_xact_id()}), one counter
 *       for the whole cluster that grows within a server's lifetime.
 * </ol>
 *
 * Compared in that order, a later term's token is larger, also after a clean or a crash restart
 * (where an xid whose commit was not flushed may be handed out again, but under a larger redo
 * position) and after a promotion. So the statement that starts a term writes only its commit
 * record and waits for no WAL flush and no standby. Point-in-time recovery and dump/restore reset
 * the order.
 *
 * <p>Where the server does not support the WAL functions (Aurora PostgreSQL answers {@code 0A000}),
 * the token is (0, 0, xid) and its commit is flushed before the term starts: still strictly
 * increasing on one cluster, and across a failover only where the new primary keeps every committed
 * transaction (Aurora's shared storage does). Such tokens sort below every token of a server that
 * supports the functions.
 *
 * <p><b>One comparable form.</b> {@link #toString()} writes the token as one short text, the same
 * everywhere the library shows it (a leader's {@code application_name}, notices, the CLI, {@link
 * FencingSql}): each number in decimal, after one capital letter that gives its count of digits
 * ({@code A} = 1 digit … {@code T} = 20 digits). Token 1 / 704,643,112 / 12,059 is {@code
 * A1I704643112E12059}. Two such texts compare, character by character, in the same order as the
 * tokens ({@link #compareTo}): store the text in one column and compare it with {@code <} and
 * {@code >} in SQL. Declare the column {@code COLLATE "C"} to be independent of the database's
 * default collation (the default libc and ICU collations give the same order too, since the texts
 * are capital letters and digits in the same places). Every text of this form sorts above the
 * {@code <timeline>/<xid>} texts of earlier versions, which start with a digit.
 *
 * @param timeline the WAL timeline of the server when the term started (0 in the fallback form);
 *     unsigned
 * @param redo the redo position of the server's latest checkpoint when the term started, in bytes
 *     (0 in the fallback form); unsigned
 * @param xid the 64-bit transaction id assigned to the term; unsigned
 */
public record FencingToken(int timeline, long redo, long xid) implements Comparable<FencingToken> {

  /** The most digits a part can have (an unsigned 64-bit number). */
  private static final int MAX_DIGITS = 20;

  /**
   * Orders by timeline, then redo position, then transaction id, each unsigned: the order of the
   * texts {@link #toString()} writes.
   *
   * @param other another token
   * @return negative, zero or positive
   */
  @Override
  public int compareTo(FencingToken other) {
    int c = Integer.compareUnsigned(timeline, other.timeline);
    if (c == 0) {
      c = Long.compareUnsigned(redo, other.redo);
    }
    return c != 0 ? c : Long.compareUnsigned(xid, other.xid);
  }

  /**
   * Returns whether this token is strictly newer than another.
   *
   * @param other another token
   * @return true if this one comes later
   */
  public boolean isNewerThan(FencingToken other) {
    return compareTo(other) > 0;
  }

  /**
   * The token's one comparable form, e.g. {@code A1I704643112E12059}: for each part, the letter
   * that gives its count of digits, then the digits.
   *
   * @return the token as one text that sorts like the token
   */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(48);
    part(sb, Integer.toUnsignedString(timeline));
    part(sb, Long.toUnsignedString(redo));
    part(sb, Long.toUnsignedString(xid));
    return sb.toString();
  }

  private static void part(StringBuilder sb, String digits) {
    sb.append((char) ('A' + digits.length() - 1)).append(digits);
  }

  /**
   * Reads a token back from its comparable form ({@link #toString()}), e.g. one stored in a column.
   *
   * @param text the text, e.g. {@code A1I704643112E12059}
   * @return the token
   * @throws IllegalArgumentException if the text is not a token's form (it names the text and the
   *     form expected)
   */
  public static FencingToken parse(CharSequence text) {
    Objects.requireNonNull(text, "text");
    FencingToken token = parseOrNull(text);
    if (token == null) {
      throw new IllegalArgumentException(
          "Not a fencing token: \""
              + text
              + "\". A token is three numbers, each written as a capital letter giving its count"
              + " of digits (A = 1 ... T = 20) and then its digits without leading zeros, e.g."
              + " A1I704643112E12059");
    }
    return token;
  }

  /** Reads a token's form, or returns null when the text is not exactly a token's form. */
  private static FencingToken parseOrNull(CharSequence text) {
    long[] parts = new long[3];
    int at = 0;
    for (int p = 0; p < 3; p++) {
      if (at >= text.length()) {
        return null;
      }
      int digits = text.charAt(at) - 'A' + 1;
      if (digits < 1 || digits > MAX_DIGITS || at + 1 + digits > text.length()) {
        return null;
      }
      String number = text.subSequence(at + 1, at + 1 + digits).toString();
      if ((digits > 1 && number.charAt(0) == '0')
          || !number.chars().allMatch(c -> c >= '0' && c <= '9')) {
        return null;
      }
      try {
        parts[p] = Long.parseUnsignedLong(number);
      } catch (NumberFormatException e) {
        return null; // 20 digits above 2^64 - 1
      }
      at += 1 + digits;
    }
    if (at != text.length() || Long.compareUnsigned(parts[0], 0xffffffffL) > 0) {
      return null;
    }
    return new FencingToken((int) parts[0], parts[1], parts[2]);
  }
}
