package dev.retsu.lock.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A TCP proxy on 127.0.0.1 between candidates and PostgreSQL that injects network faults, per
 * connection ({@link Link}) or for all of them:
 *
 * <ul>
 *   <li><b>pass</b>: bytes flow both ways (the default, and what {@link #heal()} restores);
 *   <li><b>blackhole</b>: bytes stop flowing both ways, silently: no RST, no FIN. Bytes already
 *       sent wait in socket buffers and arrive if the partition heals. As a user-space proxy
 *       terminates TCP, its kernel would still acknowledge keepalive probes; so when this JVM runs
 *       as root and {@code nft} is installed, a blackhole also drops the connection's packets in
 *       the kernel (both legs), which makes it a real partition for keepalives too ({@link
 *       #kernelDrops()});
 *   <li><b>reset</b>: both legs are closed with RST at once;
 *   <li><b>latency</b>: every chunk is delayed before it is forwarded.
 * </ul>
 *
 * <p>Threads are named {@code retsu-lock-test-proxy-*}, daemon, and stop on {@link #close()}.
 * Thread-safe.
 */
public final class FaultProxy implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(FaultProxy.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  private final String targetHost;
  private final int targetPort;
  private final ServerSocket server;
  private final List<Link> links = new CopyOnWriteArrayList<>();
  private final NetfilterDrops drops;
  private final int id = IDS.incrementAndGet();
  private volatile boolean blackholeNew;
  private volatile long latencyNanos;
  private volatile boolean closed;

  private FaultProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
    this.drops =
        NetfilterDrops.available()
            ? new NetfilterDrops("retsu_lock_proxy_" + ProcessHandle.current().pid() + "_" + id)
            : null;
    Thread acceptor = new Thread(this::acceptLoop, "retsu-lock-test-proxy-" + id + "-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /**
   * Starts a proxy in front of a server.
   *
   * @param targetHost the server's host
   * @param targetPort the server's port
   * @return the running proxy
   */
  public static FaultProxy start(String targetHost, int targetPort) {
    try {
      return new FaultProxy(Objects.requireNonNull(targetHost, "targetHost"), targetPort);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the proxy's port", e);
    }
  }

  /**
   * Starts a proxy in front of the server of a JDBC URL.
   *
   * @param jdbcUrl {@code jdbc:postgresql://host:port/...}
   * @return the running proxy
   */
  public static FaultProxy inFrontOf(String jdbcUrl) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("^jdbc:postgresql://([^:/?]+):(\\d+)/.*$").matcher(jdbcUrl);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "jdbcUrl must be jdbc:postgresql://host:port/..., but was " + jdbcUrl);
    }
    return start(m.group(1), Integer.parseInt(m.group(2)));
  }

  /**
   * Returns the proxy's port on 127.0.0.1.
   *
   * @return the port
   */
  public int port() {
    return server.getLocalPort();
  }

  /**
   * Rewrites a JDBC URL of the target server to go through this proxy.
   *
   * @param jdbcUrl a URL of the target server
   * @return the same URL with host and port of the proxy
   */
  public String rewrite(String jdbcUrl) {
    return jdbcUrl.replaceFirst(
        "^jdbc:postgresql://[^/]+/", "jdbc:postgresql://127.0.0.1:" + port() + "/");
  }

  /**
   * Returns whether blackholes also drop packets in the kernel (root and {@code nft} present).
   *
   * @return true when keepalive probes are dropped too
   */
  public boolean kernelDrops() {
    return drops != null;
  }

  /**
   * Returns the open connections.
   *
   * @return a snapshot of the links
   */
  public List<Link> links() {
    List<Link> open = new ArrayList<>();
    for (Link l : links) {
      if (!l.closed) {
        open.add(l);
      }
    }
    return open;
  }

  /**
   * Returns the open link whose upstream leg serves a PostgreSQL backend's client port, as {@code
   * pg_stat_activity.client_port} shows it.
   *
   * @param serverSideClientPort the client port the server sees
   * @return the link
   * @throws IllegalStateException if no open link has that port
   */
  public Link linkByUpstreamPort(int serverSideClientPort) {
    for (Link l : links()) {
      if (l.upstreamLocalPort == serverSideClientPort) {
        return l;
      }
    }
    throw new IllegalStateException("no open link with upstream port " + serverSideClientPort);
  }

  /** Blackholes every open connection and every new one, until {@link #heal()}. */
  public void blackhole() {
    blackholeNew = true;
    for (Link l : links()) {
      l.blackhole();
    }
  }

  /** Lets bytes flow again on every connection. */
  public void heal() {
    blackholeNew = false;
    for (Link l : links()) {
      l.heal();
    }
  }

  /** Resets every open connection. */
  public void resetAll() {
    for (Link l : links()) {
      l.reset();
    }
  }

  /**
   * Delays every forwarded chunk.
   *
   * @param latency zero for none
   */
  public void latency(Duration latency) {
    if (latency.isNegative()) {
      throw new IllegalArgumentException("latency must not be negative, but was " + latency);
    }
    this.latencyNanos = latency.toNanos();
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      LOG.debug("closing proxy port: {}", e.toString());
    }
    for (Link l : links) {
      l.close(false);
    }
    if (drops != null) {
      drops.removeAll();
    }
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket();
        try {
          upstream.connect(new InetSocketAddress(targetHost, targetPort), 5000);
        } catch (IOException refused) {
          // As a server that is down would: the client sees its connection end, instead of an
          // open socket that never answers its startup message.
          client.close();
          upstream.close();
          throw refused;
        }
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        Link link = new Link(client, upstream);
        links.add(link);
        if (blackholeNew) {
          link.blackhole();
        }
        link.start();
      } catch (IOException e) {
        if (!closed) {
          LOG.debug("proxy accept failed: {}", e.toString());
        }
      }
    }
  }

  /** One proxied connection: client leg and upstream leg. */
  public final class Link {
    private final Socket client;
    private final Socket upstream;
    private final int clientPort;
    private final int upstreamLocalPort;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition flowing = lock.newCondition();
    private volatile boolean blackholed;
    private volatile boolean closed;

    private Link(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
      this.clientPort = client.getPort();
      this.upstreamLocalPort = upstream.getLocalPort();
    }

    /**
     * Returns the candidate-side port of this connection.
     *
     * @return the client's ephemeral port
     */
    public int clientPort() {
      return clientPort;
    }

    /**
     * Returns the proxy's local port towards the server, which the server sees as the client port.
     *
     * @return the port
     */
    public int upstreamLocalPort() {
      return upstreamLocalPort;
    }

    /**
     * Returns whether both legs are closed.
     *
     * @return true once closed
     */
    public boolean isClosed() {
      return closed;
    }

    private void start() {
      pump(client, upstream, "up");
      pump(upstream, client, "down");
    }

    /** Stops the flow silently in both directions. */
    public void blackhole() {
      blackholed = true;
      if (drops != null) {
        drops.drop(this, clientPort, upstreamLocalPort);
      }
    }

    /** Lets the flow resume; bytes held back are delivered. */
    public void heal() {
      if (drops != null) {
        drops.undrop(this);
      }
      lock.lock();
      try {
        blackholed = false;
        flowing.signalAll();
      } finally {
        lock.unlock();
      }
    }

    /** Closes both legs with RST. */
    public void reset() {
      close(true);
    }

    private void close(boolean rst) {
      closed = true;
      for (Socket s : new Socket[] {client, upstream}) {
        try {
          if (rst) {
            s.setSoLinger(true, 0);
          }
          s.close();
        } catch (IOException e) {
          LOG.debug("closing proxy leg: {}", e.toString());
        }
      }
      lock.lock();
      try {
        flowing.signalAll();
      } finally {
        lock.unlock();
      }
      if (drops != null) {
        drops.undrop(this);
      }
    }

    private void pump(Socket from, Socket to, String direction) {
      Thread t =
          new Thread(
              () -> {
                byte[] buf = new byte[16384];
                try (InputStream in = from.getInputStream();
                    OutputStream out = to.getOutputStream()) {
                  while (!closed) {
                    awaitFlow();
                    int n = in.read(buf);
                    if (n < 0) {
                      break;
                    }
                    long delay = latencyNanos;
                    if (delay > 0) {
                      TimeUnit.NANOSECONDS.sleep(delay);
                    }
                    awaitFlow();
                    out.write(buf, 0, n);
                    out.flush();
                  }
                } catch (IOException | InterruptedException e) {
                  LOG.debug("proxy {} pump ended: {}", direction, e.toString());
                } finally {
                  if (!blackholed) {
                    close(false);
                  }
                }
              },
              "retsu-lock-test-proxy-" + id + "-" + clientPort + "-" + direction);
      t.setDaemon(true);
      t.start();
    }

    private void awaitFlow() throws InterruptedException {
      lock.lock();
      try {
        while (blackholed && !closed) {
          flowing.await();
        }
      } finally {
        lock.unlock();
      }
    }
  }

  /** Kernel packet drops for blackholed links, through nftables (root only). */
  static final class NetfilterDrops {
    private final String table;
    private final java.util.Map<Object, int[]> dropped =
        new java.util.concurrent.ConcurrentHashMap<>();
    private final ReentrantLock lock = new ReentrantLock();
    private boolean created;

    /** Whether this JVM made a table yet: the first one sweeps dead JVMs' tables first. */
    private static final java.util.concurrent.atomic.AtomicBoolean FIRST_TABLE =
        new java.util.concurrent.atomic.AtomicBoolean();

    /** At exit (not after a SIGKILL): this JVM's tables that a proxy left open. */
    private static void removeTablesOfThisProcess() {
      String prefix = "retsu_lock_proxy_" + ProcessHandle.current().pid() + "_";
      try {
        Process p = new ProcessBuilder("nft", "list", "tables").redirectErrorStream(true).start();
        String listing = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(10, TimeUnit.SECONDS);
        for (String line : listing.split("\n")) {
          String name = line.replace("table inet ", "").trim();
          if (line.startsWith("table inet ") && name.startsWith(prefix)) {
            nft("delete table inet " + name + "\n");
          }
        }
      } catch (IOException | RuntimeException e) {
        // at exit: nothing left to report to
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    NetfilterDrops(String table) {
      this.table = table;
    }

    /**
     * Deletes the tables of test JVMs that are gone: one killed before it closed its proxies leaves
     * drop rules for ephemeral ports, and a later connection that happens to get one of those ports
     * stalls until its connect timeout (seen as a session that took 10 s to open).
     */
    static void removeTablesOfDeadProcesses() {
      String listing;
      try {
        Process p = new ProcessBuilder("nft", "list", "tables").redirectErrorStream(true).start();
        listing = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
          return;
        }
      } catch (IOException e) {
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      java.util.regex.Matcher m =
          java.util.regex.Pattern.compile("table inet (retsu_lock_proxy_(\\d+)_\\d+)")
              .matcher(listing);
      while (m.find()) {
        long pid = Long.parseLong(m.group(2));
        if (ProcessHandle.of(pid).isEmpty()) {
          nft("delete table inet " + m.group(1) + "\n");
        }
      }
    }

    static boolean available() {
      if (!EmbeddedPostgresServer.runningAsRoot()) {
        return false;
      }
      for (String dir : List.of("/usr/sbin", "/sbin", "/usr/bin")) {
        if (java.nio.file.Files.isExecutable(java.nio.file.Path.of(dir, "nft"))) {
          return true;
        }
      }
      return false;
    }

    void drop(Object key, int... ports) {
      dropped.put(key, ports);
      apply();
    }

    void undrop(Object key) {
      if (dropped.remove(key) != null) {
        apply();
      }
    }

    void removeAll() {
      dropped.clear();
      lock.lock();
      try {
        if (created) {
          nft("delete table inet " + table + "\n");
          created = false;
        }
      } finally {
        lock.unlock();
      }
    }

    private void apply() {
      lock.lock();
      try {
        StringBuilder script = new StringBuilder();
        if (created) {
          script.append("delete table inet ").append(table).append('\n');
        } else if (FIRST_TABLE.compareAndSet(false, true)) {
          removeTablesOfDeadProcesses();
          Runtime.getRuntime()
              .addShutdownHook(
                  new Thread(
                      NetfilterDrops::removeTablesOfThisProcess, "retsu-lock-test-nft-cleanup"));
        }
        script.append("table inet ").append(table).append(" {\n");
        script.append("  chain out { type filter hook output priority -10; policy accept;\n");
        for (int[] ports : dropped.values()) {
          for (int p : ports) {
            script.append("    ip daddr 127.0.0.0/8 tcp sport ").append(p).append(" drop\n");
            script.append("    ip daddr 127.0.0.0/8 tcp dport ").append(p).append(" drop\n");
          }
        }
        script.append("  }\n}\n");
        nft(script.toString());
        created = true;
      } finally {
        lock.unlock();
      }
    }

    private static void nft(String script) {
      try {
        Process p = new ProcessBuilder("nft", "-f", "-").redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
          in.write(script.getBytes(StandardCharsets.UTF_8));
        }
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
          throw new IllegalStateException("nft failed: " + output + "\nscript:\n" + script);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot run nft", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted running nft", e);
      }
    }
  }
}
