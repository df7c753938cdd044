package dev.retsu.lock.internal.session;

import java.lang.reflect.Field;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The two private pgjdbc fields the socket probe reads by reflection: the query executor's stream
 * (the session's socket) and the stream's buffered input (its pending bytes). They are pgjdbc's
 * internals, so a pgjdbc release may rename or remove them. Each one that cannot be reached is
 * logged once per JVM at WARN, naming the field, the pgjdbc version and what the library does
 * instead; never a silent loss of the at-once detection.
 *
 * <p>{@link #lookup} is the one lookup: the probe's own fields come from it with pgjdbc's names,
 * and a test points it at names that do not exist. Immutable; thread-safe.
 */
final class PgjdbcInternals {

  private static final Logger LOG = LoggerFactory.getLogger(PgjdbcInternals.class);

  /** pgjdbc's class holding the session's stream. */
  static final String EXECUTOR_CLASS = "org.postgresql.core.QueryExecutorBase";

  /** The field of {@link #EXECUTOR_CLASS} holding the stream. */
  static final String STREAM_FIELD = "pgStream";

  /** pgjdbc's stream class. */
  static final String STREAM_CLASS = "org.postgresql.core.PGStream";

  /** The field of {@link #STREAM_CLASS} holding its buffered input. */
  static final String INPUT_FIELD = "pgInput";

  /** What the library does without the stream; the WARN says it. */
  static final String WITHOUT_STREAM =
      "the client cannot read a session's end on its socket at once. Instead, ensureLeader()"
          + " proves the session with a round trip on every call, a leader finds a session that"
          + " ended under it at its next heartbeat round trip (within the heartbeat interval; an"
          + " idle leader still reads a FATAL through pgjdbc's notification wait), a term's server"
          + " path reads UNKNOWN, and a waiting standby's client socket gets no keepalives."
          + " Leadership stays safe; the self-fencing deadline still bounds an unproven leader";

  /** What the library does without the buffered input; the WARN says it. */
  static final String WITHOUT_INPUT =
      "the client cannot count a session's pending bytes without reading its socket. Instead,"
          + " every probe reads the socket for up to 1 ms, as it does over SSL; a session's end is"
          + " still seen at once";

  /** Fields already reported missing, by {@code class.field}: each is logged once. */
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

  /** No pgjdbc: nothing to reach, nothing to warn about. */
  static final PgjdbcInternals NONE = new PgjdbcInternals(null, null);

  /** The stream field, or null when it cannot be reached. */
  final Field stream;

  /** The input field, or null when it cannot be reached. */
  final Field input;

  private PgjdbcInternals(Field stream, Field input) {
    this.stream = stream;
    this.input = input;
  }

  /** pgjdbc's own names: what the probe uses. */
  static PgjdbcInternals pgjdbc() {
    return lookup(EXECUTOR_CLASS, STREAM_FIELD, STREAM_CLASS, INPUT_FIELD);
  }

  /**
   * Finds both fields by name and makes them accessible; logs each one it cannot reach once, at
   * WARN. Never throws.
   *
   * @return the fields found (null for each one missing)
   */
  static PgjdbcInternals lookup(
      String executorClass, String streamField, String streamClass, String inputField) {
    Field stream = field(executorClass, streamField, WITHOUT_STREAM);
    Field input = field(streamClass, inputField, WITHOUT_INPUT);
    return new PgjdbcInternals(stream, input);
  }

  private static Field field(String owner, String name, String consequence) {
    try {
      Field f =
          Class.forName(owner, false, PgjdbcInternals.class.getClassLoader())
              .getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      if (WARNED.add(owner + "." + name)) {
        LOG.warn(
            "retsu-lock cannot reach pgjdbc's private field {}.{} (pgjdbc {}; {}): {}. See"
                + " \"pgjdbc's internals moved\" in docs/troubleshooting.md",
            owner,
            name,
            pgjdbcVersion(),
            e.toString(),
            consequence);
      }
      return null;
    }
  }

  /** The pgjdbc version on the class path, or "unknown". */
  static String pgjdbcVersion() {
    try {
      Class<?> info = Class.forName("org.postgresql.util.DriverInfo");
      return String.valueOf(info.getField("DRIVER_VERSION").get(null));
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return "unknown";
    }
  }
}
