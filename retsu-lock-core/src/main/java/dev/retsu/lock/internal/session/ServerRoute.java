package dev.retsu.lock.internal.session;

import dev.retsu.lock.ServerPath;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * How one session reaches PostgreSQL: where the client's socket goes (the host as the client named
 * it, and the port), and whether the server's TCP peer is that socket ({@link ServerPath}). The
 * opening statement reads the server's side ({@code inet_client_addr()}, {@code
 * inet_client_port()}, {@code inet_server_addr()}, {@code inet_server_port()}); the client's side
 * comes from pgjdbc's socket, so addresses are compared, never names: {@code localhost} against
 * {@code 127.0.0.1}, a name with several addresses, an IPv4 address mapped into IPv6, or NAT that
 * keeps the client's address and port give no false warning. Immutable, thread-safe.
 */
public final class ServerRoute {

  /** A session whose route is not known. */
  public static final ServerRoute UNKNOWN =
      new ServerRoute(ServerPath.UNKNOWN, null, -1, null, null, null);

  private final ServerPath path;
  private final String host;
  private final int port;
  private final String local;
  private final String serverSeesClient;
  private final String server;

  private ServerRoute(
      ServerPath path,
      String host,
      int port,
      String local,
      String serverSeesClient,
      String server) {
    this.path = path;
    this.host = host;
    this.port = port;
    this.local = local;
    this.serverSeesClient = serverSeesClient;
    this.server = server;
  }

  /**
   * What the client's own socket says, before any statement: the host it was connected to (as the
   * client named it) and the port. The path is {@link ServerPath#UNKNOWN} until {@link
   * #withServerView} adds the server's side.
   *
   * @param conn the session's connection
   * @return the route as far as the client knows it, or {@link #UNKNOWN} when the connection has no
   *     TCP socket pgjdbc exposes
   */
  static ServerRoute ofClient(Connection conn) {
    Socket socket = PgSession.socket(conn);
    if (socket == null) {
      return UNKNOWN;
    }
    SocketAddress remote = socket.getRemoteSocketAddress();
    if (!(remote instanceof InetSocketAddress r) || socket.getLocalAddress() == null) {
      return UNKNOWN;
    }
    String local = endpoint(socket.getLocalAddress(), socket.getLocalPort());
    return new ServerRoute(ServerPath.UNKNOWN, r.getHostString(), r.getPort(), local, null, null);
  }

  /**
   * A route known by where the client connected only, as {@link #ofClient} finds it before any
   * statement.
   *
   * @param host the host as the client named it
   * @param port the port
   * @return the route, its path {@link ServerPath#UNKNOWN}
   */
  static ServerRoute connectedTo(String host, int port) {
    return new ServerRoute(ServerPath.UNKNOWN, host, port, null, null, null);
  }

  /**
   * This route with the server's side of it, as the opening statement returned it.
   *
   * @param conn the session's connection (its socket gives the client's local address and port)
   * @param clientAddr {@code host(inet_client_addr())}: null when the server's side is a
   *     Unix-domain socket
   * @param clientPort {@code inet_client_port()}, or null
   * @param serverAddr {@code host(inet_server_addr())}, or null
   * @param serverPort {@code inet_server_port()}, or null
   * @return the route with its path
   */
  ServerRoute withServerView(
      Connection conn,
      String clientAddr,
      Integer clientPort,
      String serverAddr,
      Integer serverPort) {
    if (host == null) {
      return this;
    }
    Socket socket = PgSession.socket(conn);
    if (socket == null || socket.getLocalAddress() == null) {
      return UNKNOWN;
    }
    String server =
        serverAddr == null || serverPort == null
            ? "a Unix-domain socket"
            : endpoint(parse(serverAddr), serverPort);
    if (clientAddr == null || clientPort == null) {
      // The client speaks TCP, the server's peer a Unix-domain socket: something bridged them.
      return new ServerRoute(ServerPath.PROXIED, host, port, local, "a Unix-domain socket", server);
    }
    InetAddress seen = parse(clientAddr);
    boolean same =
        seen != null
            && seen.equals(normalise(socket.getLocalAddress()))
            && clientPort == socket.getLocalPort();
    return new ServerRoute(
        same ? ServerPath.DIRECT : ServerPath.PROXIED,
        host,
        port,
        local,
        endpoint(seen, clientPort),
        server);
  }

  /** Whether the session goes through something that ends TCP between client and server. */
  public ServerPath path() {
    return path;
  }

  /** The host the client connected to, as it named it (a name or a literal), or null. */
  public String host() {
    return host;
  }

  /** The port the client connected to, or -1. */
  public int port() {
    return port;
  }

  /**
   * The WARN line for a session through a proxy: what the server sees, and which bounds still apply
   * to a leader that vanishes behind it.
   *
   * @param settings the session's settings (the server-side bounds, if any)
   * @param selfFenceAfter the liveness deadline ({@code Checks.MAX_DURATION} for a plain lease)
   * @return the message, without the log prefix
   */
  String proxiedWarning(Map<String, String> settings, Duration selfFenceAfter) {
    String idle = idleSessionTimeout(settings.get("idle_session_timeout"));
    boolean fences = selfFenceAfter.compareTo(Duration.ofDays(1)) < 0;
    String fence = fences ? " and self-fencing (" + seconds(selfFenceAfter.toMillis()) + ")" : "";
    String bound =
        idle != null
            ? "only idle_session_timeout (" + idle + ")" + fence
            : "nothing on the server (idle_session_timeout is off) but the proxy's own timeouts"
                + (fences ? "; self-fencing (" + seconds(selfFenceAfter.toMillis()) + ")" : "");
    return "Session through a proxy or pooler: this process connected from "
        + local
        + " to "
        + host
        + ":"
        + port
        + ", but the server (at "
        + server
        + ") sees its client at "
        + serverSeesClient
        + ". The server's TCP keepalives and client_connection_check_interval watch that proxy,"
        + " not this process: "
        + bound
        + " bound a lock holder that vanishes behind it"
        + (fences ? ", and the proxy's own client timeouts must be longer than self-fencing" : "")
        + ".";
  }

  /** The route for people. */
  @Override
  public String toString() {
    return path == ServerPath.UNKNOWN
        ? "UNKNOWN"
        : path + " (" + local + " -> " + host + ":" + port + ", server " + server + ")";
  }

  private static String seconds(long millis) {
    return millis % 1000 == 0
        ? millis / 1000 + "s"
        : String.format(Locale.ROOT, "%.1fs", millis / 1000.0);
  }

  /** The setting as people read it, or null when it is not set or off. */
  private static String idleSessionTimeout(String value) {
    if (value == null || value.isBlank() || value.trim().equals("0")) {
      return null;
    }
    try {
      return seconds(Long.parseLong(value.trim()));
    } catch (NumberFormatException e) {
      return value.trim(); // a user's own text, such as "5min"
    }
  }

  /** An IP literal as an address (no name lookup); IPv4-mapped IPv6 comes back as IPv4. */
  private static InetAddress parse(String literal) {
    if (literal == null || literal.isEmpty() || !literal.matches("[0-9A-Fa-f:.]+")) {
      return null;
    }
    try {
      return InetAddress.getByName(literal);
    } catch (UnknownHostException e) {
      return null;
    }
  }

  private static InetAddress normalise(InetAddress a) {
    return parse(a.getHostAddress().replaceFirst("%.*$", ""));
  }

  private static String endpoint(InetAddress a, int port) {
    if (a == null) {
      return "?:" + port;
    }
    String literal = a.getHostAddress().replaceFirst("%.*$", "");
    return (literal.contains(":") ? "[" + literal + "]" : literal) + ":" + port;
  }
}
