package dev.retsu.lock;

/**
 * How a lock's session reaches PostgreSQL, as the statement that opened it saw it: whether the
 * server's TCP peer is this process's own socket. It decides what frees the lock of a leader that
 * vanished (a partition, a crash the network hides) or froze: see {@link #PROXIED}.
 *
 * <p>It compares the client address and port the server sees ({@code inet_client_addr()}, {@code
 * inet_client_port()}) with the local address and port of the client's own socket, not host names,
 * so {@code localhost} against {@code 127.0.0.1}, a name with several addresses or a Kubernetes
 * service address (NAT that keeps the client's address and port) are {@link #DIRECT}.
 */
public enum ServerPath {

  /**
   * The server's peer is this process's socket: the server-side TCP keepalives, {@code
   * tcp_user_timeout} and {@code client_connection_check_interval} that a leader's session carries
   * watch this process, as does {@code idle_session_timeout}.
   */
  DIRECT,

  /**
   * Something between this process and the server ends the TCP connection and opens its own: a
   * session-mode pooler (PgBouncer, Supavisor, RDS Proxy), a TCP proxy (HAProxy, a port forward),
   * or NAT that rewrites the client's address. The server's keepalives and connection checks then
   * watch that proxy, not this process: only {@code idle_session_timeout} on the server and the
   * leader's own self-fencing bound a leader that vanished behind it, and the proxy's own client
   * timeouts must be longer than the self-fencing deadline. A loop logs this at WARN when it opens
   * such a session.
   */
  PROXIED,

  /**
   * Not known: the session is not on a TCP socket pgjdbc exposes (a Unix-domain socket, another
   * driver), or the server did not say.
   */
  UNKNOWN
}
