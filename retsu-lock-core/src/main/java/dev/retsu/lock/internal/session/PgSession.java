package dev.retsu.lock.internal.session;

import dev.retsu.lock.internal.session.SessionIo.Evidence;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.SQLException;
import jdk.net.ExtendedSocketOptions;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.TransactionState;

/**
 * What the client already knows about its PostgreSQL session without a round trip, read from
 * pgjdbc. pgjdbc is optional for core: every method answers {@code UNKNOWN}/{@code -1} when it is
 * absent or the connection is another driver's, and callers then fall back to a round trip.
 *
 * <p>The probe reads what is already on the session's socket. While a session is between
 * statements, PostgreSQL sends nothing but asynchronous messages; when it ends the session it sends
 * a FATAL ErrorResponse and closes the socket (EOF), or the peer's kernel resets it (RST). So
 * anything pending is either an asynchronous message or evidence that the session ended. pgjdbc's
 * own {@code getNotifications()} is not enough: it reads nothing inside a transaction and reports a
 * bare EOF as "nothing pending".
 *
 * <p>Callers must hold the session's I/O lock: pgjdbc connections are not safe for concurrent use.
 * Thread-safe otherwise (stateless).
 */
public final class PgSession {

  /** The session's transaction state as pgjdbc tracks it. */
  public enum Transaction {
    /** Not in a transaction. */
    IDLE,
    /** In a transaction. */
    OPEN,
    /** In a failed transaction. */
    FAILED,
    /** Not known (no pgjdbc). */
    UNKNOWN
  }

  private static final boolean PGJDBC = pgjdbcPresent();

  /** pgjdbc's private fields the probe reads; one that moved is logged once and left null. */
  private static final PgjdbcInternals INTERNALS =
      PGJDBC ? PgjdbcInternals.pgjdbc() : PgjdbcInternals.NONE;

  private PgSession() {}

  /**
   * Loads pgjdbc's message translation (its resource bundle lookups, about 10 ms the first time in
   * a JVM), which the first failure of a statement on an ended session would load: on a leader's
   * graceful release that is the worker's aborted socket read, on the cores a successor needs.
   * Never throws.
   */
  public static void warmMessages() {
    if (PGJDBC) {
      try {
        org.postgresql.util.GT.tr("An I/O error occurred while sending to the backend.");
      } catch (RuntimeException | LinkageError e) {
        // nothing to warm: the first failure pays for it
      }
    }
  }

  /**
   * Whether {@link #probe} can read sockets in this JVM.
   *
   * @return true when pgjdbc is present and its stream is reachable
   */
  public static boolean canProbe() {
    return INTERNALS.stream != null;
  }

  /**
   * Reads what is already on the session's socket, waiting at most about a millisecond: sees
   * everything {@link #probe(Connection, boolean)} sees, and a bare EOF or reset too.
   *
   * @param physical the pgjdbc connection (or a handle that unwraps to it)
   * @return what the socket shows
   */
  public static Evidence probe(Connection physical) {
    return probe(physical, true);
  }

  /**
   * Reads what the client has already received from its session. Without {@code readSocket} it
   * waits for nothing: it looks at the bytes pgjdbc has buffered and the bytes in the socket's
   * receive buffer, which is where a FATAL from a terminate, a shutdown, an idle timeout or a crash
   * of another backend arrives, and peeks at the first one. What only a read can see is a bare EOF
   * or a reset with no message before it (a killed backend, a proxy or pooler that vanished), and,
   * on a socket whose bytes cannot be counted without reading (SSL, GSS encryption, a custom socket
   * factory), everything: there the probe always reads, waiting at most a millisecond when nothing
   * is pending. With {@code readSocket} it reads in every case.
   *
   * @param physical the pgjdbc connection (or a handle that unwraps to it)
   * @param readSocket whether to read the socket when nothing is pending
   * @return what the socket shows
   */
  public static Evidence probe(Connection physical, boolean readSocket) {
    return probe(INTERNALS, physical, readSocket);
  }

  /** {@link #probe(Connection, boolean)} through the given fields (a test names missing ones). */
  static Evidence probe(PgjdbcInternals internals, Connection physical, boolean readSocket) {
    PGStream stream = stream(internals, physical);
    if (stream == null) {
      return Evidence.UNKNOWN;
    }
    if (stream.isClosed()) {
      return Evidence.ENDED;
    }
    InputStream input = countable(internals, stream);
    if (input != null) {
      try {
        if (input.available() > 0) {
          return stream.peekChar() == 'E' ? Evidence.ENDED : Evidence.PENDING; // at once
        }
      } catch (IOException e) {
        return Evidence.ENDED;
      }
      if (!readSocket) {
        return Evidence.QUIET;
      }
    }
    return timedPeek(stream);
  }

  /**
   * Whether a probe without a read sees a FATAL on this connection: pgjdbc's input is reachable and
   * the socket is a plain TCP socket whose pending bytes the kernel counts.
   *
   * @param physical the connection
   * @return true when {@link #probe(Connection, boolean)} can skip the read
   */
  public static boolean countsPendingBytes(Connection physical) {
    return countsPendingBytes(INTERNALS, physical);
  }

  /** {@link #countsPendingBytes(Connection)} through the given fields. */
  static boolean countsPendingBytes(PgjdbcInternals internals, Connection physical) {
    PGStream stream = stream(internals, physical);
    return stream != null && countable(internals, stream) != null;
  }

  private static Evidence timedPeek(PGStream stream) {
    int saved;
    try {
      saved = stream.getNetworkTimeout();
    } catch (IOException e) {
      return Evidence.ENDED;
    }
    try {
      stream.setNetworkTimeout(1);
      int next = stream.peekChar();
      return next == 'E' ? Evidence.ENDED : Evidence.PENDING;
    } catch (SocketTimeoutException e) {
      return Evidence.QUIET;
    } catch (EOFException e) {
      return Evidence.ENDED;
    } catch (IOException e) {
      return Evidence.ENDED; // reset, or the socket failed
    } finally {
      try {
        stream.setNetworkTimeout(saved);
      } catch (IOException e) {
        // The socket is gone; the next statement on it reports the session's end.
      }
    }
  }

  /**
   * pgjdbc's buffered input, when what it holds plus what the kernel holds is a true count of the
   * bytes received: a plain socket ({@code java.net.Socket} itself, as pgjdbc's default factory
   * makes it), no GSS encryption. Null otherwise.
   */
  private static InputStream countable(PgjdbcInternals internals, PGStream stream) {
    if (internals.input == null
        || stream.isGssEncrypted()
        || stream.getSocket().getClass() != Socket.class) {
      return null;
    }
    try {
      return (InputStream) internals.input.get(stream);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /**
   * The transaction state pgjdbc tracks for the session.
   *
   * @param physical the connection
   * @return the state, or {@code UNKNOWN}
   */
  public static Transaction transaction(Connection physical) {
    if (!PGJDBC) {
      return Transaction.UNKNOWN;
    }
    try {
      if (!physical.isWrapperFor(BaseConnection.class)) {
        return Transaction.UNKNOWN;
      }
      TransactionState state = physical.unwrap(BaseConnection.class).getTransactionState();
      switch (state) {
        case IDLE:
          return Transaction.IDLE;
        case OPEN:
          return Transaction.OPEN;
        case FAILED:
          return Transaction.FAILED;
        default:
          return Transaction.UNKNOWN;
      }
    } catch (SQLException | RuntimeException e) {
      return Transaction.UNKNOWN;
    }
  }

  /**
   * Waits on the session's socket until something arrives or {@code millis} pass: returns at once
   * with an SQLException when the session ends. Only waits when the session is not in a transaction
   * (pgjdbc reads nothing inside one).
   *
   * @param physical the connection
   * @param millis how long at most
   * @return the notifications that arrived and were consumed, or null if this cannot wait here
   * @throws SQLException when the session ended
   */
  public static PGNotification[] await(Connection physical, int millis) throws SQLException {
    if (!canAwait(physical)) {
      return null;
    }
    PGNotification[] notes =
        physical.unwrap(PGConnection.class).getNotifications(Math.max(1, millis));
    return notes == null ? new PGNotification[0] : notes;
  }

  /**
   * One notification as the client received it.
   *
   * @param channel the channel
   * @param pid the notifying backend's pid
   * @param payload the payload
   */
  public record Note(String channel, int pid, String payload) {}

  /**
   * The notifications that arrived, waiting up to {@code millis} for one when none has (0: no wait,
   * only what the client already received or can read without blocking).
   *
   * @param physical the connection
   * @param millis how long at most
   * @return the notifications, consumed; null if this connection cannot receive them here
   * @throws SQLException when the session ended
   */
  public static java.util.List<Note> notes(Connection physical, int millis) throws SQLException {
    PGNotification[] got;
    if (millis > 0) {
      got = await(physical, millis);
    } else {
      if (!canAwait(physical)) {
        return null;
      }
      got = physical.unwrap(PGConnection.class).getNotifications();
    }
    if (got == null) {
      return null;
    }
    java.util.List<Note> out = new java.util.ArrayList<>(got.length);
    for (PGNotification n : got) {
      out.add(new Note(n.getName(), n.getPID(), n.getParameter()));
    }
    return out;
  }

  /**
   * Whether {@link #await} can wait on this connection's socket now: pgjdbc, and no transaction
   * open (pgjdbc reads nothing inside one).
   *
   * @param physical the connection
   * @return true when a wait would read the socket
   * @throws SQLException when the connection cannot say
   */
  public static boolean canAwait(Connection physical) throws SQLException {
    return PGJDBC
        && physical.isWrapperFor(PGConnection.class)
        && transaction(physical) == Transaction.IDLE;
  }

  /**
   * Turns on TCP keepalives on the client's own socket, so a client blocked reading (a long lock
   * wait) notices a vanished server or a healed partition within {@code idle + interval * count}
   * seconds instead of at its network timeout. Options the platform lacks are skipped.
   *
   * @param physical the connection
   * @param idleSeconds seconds of silence before the first probe
   * @param intervalSeconds seconds between probes
   * @param count unanswered probes before the socket fails
   * @return true if keepalives with all three values are on
   */
  public static boolean clientKeepalives(
      Connection physical, int idleSeconds, int intervalSeconds, int count) {
    PGStream stream = stream(INTERNALS, physical);
    if (stream == null) {
      return false;
    }
    try {
      Socket socket = stream.getSocket();
      socket.setKeepAlive(true);
      boolean all = true;
      all &= setIfSupported(socket, ExtendedSocketOptions.TCP_KEEPIDLE, idleSeconds);
      all &= setIfSupported(socket, ExtendedSocketOptions.TCP_KEEPINTERVAL, intervalSeconds);
      all &= setIfSupported(socket, ExtendedSocketOptions.TCP_KEEPCOUNT, count);
      return all;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static boolean setIfSupported(Socket socket, SocketOption<Integer> option, int value)
      throws IOException {
    if (!socket.supportedOptions().contains(option)) {
      return false;
    }
    socket.setOption(option, value);
    return true;
  }

  /**
   * The session's TCP socket as pgjdbc opened it (an SSL socket when the session is encrypted), for
   * its addresses; null when pgjdbc's stream is not reachable.
   *
   * @param physical the connection (or a handle that unwraps to pgjdbc's)
   * @return the socket, or null
   */
  static Socket socket(Connection physical) {
    PGStream stream = stream(INTERNALS, physical);
    return stream == null ? null : stream.getSocket();
  }

  private static PGStream stream(PgjdbcInternals internals, Connection physical) {
    if (internals.stream == null) {
      return null;
    }
    try {
      if (!physical.isWrapperFor(BaseConnection.class)) {
        return null;
      }
      Object executor = physical.unwrap(BaseConnection.class).getQueryExecutor();
      return (PGStream) internals.stream.get(executor);
    } catch (SQLException | ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static boolean pgjdbcPresent() {
    try {
      Class<?> pgjdbc =
          Class.forName(
              "org.postgresql.core.BaseConnection", false, PgSession.class.getClassLoader());
      // Core as a named module reads pgjdbc's automatic module when both are on the module path
      // (requires static). With pgjdbc on the class path instead, it must ask to read it.
      Module self = PgSession.class.getModule();
      if (!self.canRead(pgjdbc.getModule())) {
        self.addReads(pgjdbc.getModule());
      }
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
