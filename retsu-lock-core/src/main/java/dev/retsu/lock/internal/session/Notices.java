package dev.retsu.lock.internal.session;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import java.util.Optional;

/**
 * Leadership as a shared fact, the one format: what a leader's session shows and what it notifies.
 *
 * <ul>
 *   <li>{@code application_name}: {@code retsu-lock:<candidate>} while a session waits or tries,
 *       {@code retsu-lock:<candidate>#<token>} ({@link FencingToken#toString()}) from the statement
 *       that takes a term's fencing token on ({@link #termName}); a preferred WAIT standby waits as
 *       {@code retsu-lock-preferred:<candidate>}. The candidate part is cut so that the whole fits
 *       PostgreSQL's 63 bytes; the token is never cut.
 *   <li>notifications on the channel {@value #CHANNEL} (one per database): {@code acquired <key>
 *       <pid> <token> <candidate>}, sent by the statement that takes the token (delivered at its
 *       commit), and {@code released <key> <pid> <token>}, sent just before a graceful release. A
 *       term that ends because its session was lost sends nothing.
 *   <li>a key is {@code 1:<bigint>} or {@code 2:<first>:<second>} ({@link #keyId}).
 * </ul>
 *
 * Stateless, thread-safe.
 */
public final class Notices {

  /** The channel every leader notifies and every watch listens on. */
  public static final String CHANNEL = "retsu_lock";

  /**
   * The prefix of a candidate's sessions' {@code application_name}; public as {@code
   * AdvisoryLock.APPLICATION_NAME_PREFIX}.
   */
  public static final String PREFIX = "retsu-lock:";

  /** The prefix of a preferred WAIT standby's waiting session. */
  public static final String PREFERRED_PREFIX = "retsu-lock-preferred:";

  /** PostgreSQL keeps 63 bytes of {@code application_name}. */
  public static final int MAX_NAME = 63;

  private Notices() {}

  /**
   * The key as notices and the SQL check spell it.
   *
   * @param key the key
   * @return {@code 1:<bigint>} or {@code 2:<first>:<second>}
   */
  public static String keyId(LockKey key) {
    return key.isTwoPart() ? "2:" + key.first() + ":" + key.second() : "1:" + key.value();
  }

  /**
   * A candidate's {@code application_name} without a term's token, and {@code retsu-lock:} for a
   * preferred standby's {@code retsu-lock-preferred:}: what a term's name starts with.
   *
   * @param applicationName a session's name as set by the library
   * @return the candidate's name
   */
  public static String candidateName(String applicationName) {
    String name = applicationName;
    if (name.startsWith(PREFERRED_PREFIX)) {
      name = PREFIX + name.substring(PREFERRED_PREFIX.length());
    }
    int hash = name.lastIndexOf('#');
    return hash >= 0 && parseToken(name.substring(hash + 1)).isPresent()
        ? name.substring(0, hash)
        : name;
  }

  /**
   * The part of a term's {@code application_name} before the token, cut so that the whole fits:
   * printable ASCII only (PostgreSQL replaces other characters anyway, which would move the token
   * past the 63rd byte), at most 63 − 32 bytes when cut.
   *
   * @param applicationName the candidate's {@code application_name}
   * @return the prefix the token statement appends {@code #<token>} to
   */
  public static String termPrefix(String applicationName) {
    StringBuilder sb = new StringBuilder(applicationName.length());
    for (int i = 0; i < applicationName.length(); i++) {
      char c = applicationName.charAt(i);
      sb.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return sb.toString();
  }

  /**
   * The SQL that makes a term's {@code application_name} from the bound prefix and a token suffix
   * expression: the prefix cut to what the suffix leaves of 63 bytes.
   *
   * @param suffix a text expression {@code '#' || <token>}
   * @return a text expression with one parameter, the prefix
   */
  static String termNameSql(String suffix) {
    return "pg_catalog.left(?::text, "
        + MAX_NAME
        + " - pg_catalog.length("
        + suffix
        + ")) || "
        + suffix;
  }

  /**
   * A term's {@code application_name} as the token statement makes it (for the settings a proof
   * applies again after {@code RESET ALL}).
   *
   * @param applicationName the candidate's {@code application_name}
   * @param token the term's token
   * @return the name
   */
  public static String termName(String applicationName, FencingToken token) {
    String suffix = "#" + token;
    String prefix = termPrefix(applicationName);
    int room = MAX_NAME - suffix.length();
    return (prefix.length() > room ? prefix.substring(0, room) : prefix) + suffix;
  }

  /** What an {@code application_name} says about its session. */
  public record Name(String candidateId, Optional<FencingToken> token, boolean preferred) {}

  /**
   * Reads a session's {@code application_name}.
   *
   * @param applicationName the name, may be null
   * @return the candidate and the token, or empty when it is no candidate's session
   */
  public static Optional<Name> parseName(String applicationName) {
    if (applicationName == null) {
      return Optional.empty();
    }
    boolean preferred = applicationName.startsWith(PREFERRED_PREFIX);
    if (!preferred && !applicationName.startsWith(PREFIX)) {
      return Optional.empty();
    }
    String rest = applicationName.substring((preferred ? PREFERRED_PREFIX : PREFIX).length());
    int hash = rest.lastIndexOf('#');
    if (hash >= 0) {
      Optional<FencingToken> token = parseToken(rest.substring(hash + 1));
      if (token.isPresent()) {
        return Optional.of(new Name(rest.substring(0, hash), token, preferred));
      }
    }
    return Optional.of(new Name(rest, Optional.empty(), preferred));
  }

  /**
   * Reads a token's comparable form ({@link FencingToken#toString()}).
   *
   * @param text the text
   * @return the token, or empty when it is not one
   */
  public static Optional<FencingToken> parseToken(String text) {
    try {
      return Optional.of(FencingToken.parse(text));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** The kind of a notice. */
  public enum Kind {
    /** A term started. */
    ACQUIRED,
    /** A term is about to be released gracefully. */
    RELEASED
  }

  /**
   * One notice as read from the channel.
   *
   * @param kind acquired or released
   * @param keyId the key's id ({@link #keyId})
   * @param pid the leader's backend pid
   * @param token the term's token
   * @param candidateId the candidate (acquired only, else null)
   */
  public record Notice(Kind kind, String keyId, int pid, FencingToken token, String candidateId) {}

  /**
   * Reads a notification's payload.
   *
   * @param payload the payload
   * @return the notice, or empty when it is not one of ours
   */
  public static Optional<Notice> parse(String payload) {
    if (payload == null) {
      return Optional.empty();
    }
    String[] p = payload.split(" ", 5);
    if (p.length < 4) {
      return Optional.empty();
    }
    Kind kind;
    if (p[0].equals("acquired") && p.length == 5) {
      kind = Kind.ACQUIRED;
    } else if (p[0].equals("released")) {
      kind = Kind.RELEASED;
    } else {
      return Optional.empty();
    }
    Optional<FencingToken> token = parseToken(p[3]);
    if (token.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(
          new Notice(
              kind,
              p[1],
              Integer.parseInt(p[2]),
              token.get(),
              kind == Kind.ACQUIRED ? p[4] : null));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /**
   * The {@code acquired} notice as the token statements send it, a text expression ({@code
   * pg_notify} returns void): {@code acquired <key> <pid> <token> <candidate>}, the words {@link
   * #parse} reads. The candidate is the last bound parameter of the expression.
   *
   * @param keyId a text expression of the key's id ({@link #keyId})
   * @param pid an expression of the leader's backend pid
   * @param token a text expression of the token's comparable form
   * @return the expression
   */
  static String acquiredSql(String keyId, String pid, String token) {
    return "pg_catalog.pg_notify('"
        + CHANNEL
        + "', "
        + acquiredPayloadSql(keyId, pid, token)
        + ")::text";
  }

  /**
   * The payload of {@link #acquiredSql}: a text expression joining the words with one space.
   *
   * @param keyId a text expression of the key's id
   * @param pid an expression of the pid
   * @param token a text expression of the token
   * @return the expression, with one parameter: the candidate
   */
  static String acquiredPayloadSql(String keyId, String pid, String token) {
    return "'acquired ' || "
        + keyId
        + " || ' ' || "
        + pid
        + " || ' ' || "
        + token
        + " || ' ' || ?::text";
  }

  /**
   * The payload of a {@code released} notice.
   *
   * @param key the key
   * @param pid the leader's pid
   * @param token the term's token
   * @return the payload
   */
  public static String released(LockKey key, int pid, FencingToken token) {
    return "released " + keyId(key) + " " + pid + " " + token;
  }

  /**
   * A group member's notice, on its group's own channel, that it holds membership slot {@code
   * slot}; like every notice, a hint to look now, believed only from a member's session.
   *
   * @param slot the slot
   * @return the payload
   */
  public static String joined(int slot) {
    return "joined:" + slot;
  }

  /**
   * A group member's notice that it left slot {@code slot}, its keys released.
   *
   * @param slot the slot
   * @return the payload
   */
  public static String left(int slot) {
    return "left:" + slot;
  }

  /**
   * A group member's notice that the member at slot {@code slot} is gone.
   *
   * @param slot the slot
   * @return the payload
   */
  public static String gone(int slot) {
    return "gone:" + slot;
  }

  /**
   * A group member's notice that it yielded the key at {@code index} and does not take it for
   * {@code cooldownMillis}.
   *
   * @param index the key's position in the group
   * @param cooldownMillis the cooldown
   * @return the payload
   */
  public static String yielded(int index, long cooldownMillis) {
    return "yielded:" + index + ":" + cooldownMillis;
  }

  /**
   * What a {@link #yielded} notice asks.
   *
   * @param index the key's position
   * @param millis the hand-off window
   */
  public record HandOff(int index, long millis) {}

  /**
   * Reads a {@link #yielded} notice: null unless it is {@code yielded:<index>:<millis>} with an
   * index among {@code keys} and a cooldown of zero or more, which is capped at {@code maxMillis}.
   *
   * @param notice the payload
   * @param keys the group's key count
   * @param maxMillis the longest window
   * @return the window, or null
   */
  public static HandOff handOff(String notice, int keys, long maxMillis) {
    if (notice == null || !notice.startsWith("yielded:")) {
      return null;
    }
    String[] f = notice.split(":", -1);
    if (f.length != 3) {
      return null;
    }
    try {
      int index = Integer.parseInt(f[1]);
      long millis = Long.parseLong(f[2]);
      if (index < 0 || index >= keys || millis < 0) {
        return null;
      }
      return new HandOff(index, Math.min(millis, maxMillis));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
