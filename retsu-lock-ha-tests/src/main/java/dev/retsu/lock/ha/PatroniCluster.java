package dev.retsu.lock.ha;

import dev.retsu.lock.testing.ChildJvm;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real HA cluster on loopback, started and stopped by the test: one etcd member (the DCS), two or
 * three PostgreSQL 15 nodes each managed by its own Patroni (streaming replication, pg_rewind), and
 * HAProxy on the primary endpoint. PostgreSQL and Patroni run as the {@code postgres} user (through
 * {@code setpriv}); their data live in a fresh directory under {@code /tmp}, removed on close; the
 * processes' logs go to {@code target/ha-logs/}.
 *
 * <p>Faults: a planned switchover ({@code patronictl switchover}), kill -9 or SIGSTOP of a node's
 * postmaster, SIGSTOP of its Patroni (the HA agent frozen), a crash of the whole node, a network
 * partition of the node (nftables), and cut replication links (replica lag). Not thread-safe: one
 * test drives it.
 */
public final class PatroniCluster implements AutoCloseable {

  /** One PostgreSQL node and its Patroni. */
  public final class Node {
    /** Its ports and places. */
    public final ClusterConfig.NodeSpec spec;

    final Path config;
    Process agent;

    Node(ClusterConfig.NodeSpec spec, Path config) {
      this.spec = spec;
      this.config = config;
    }

    /**
     * Its Patroni name.
     *
     * @return e.g. {@code pg1}
     */
    public String name() {
      return spec.name();
    }

    /**
     * A JDBC URL to this node's direct address (not behind HAProxy, not cut by a partition).
     *
     * @return the URL
     */
    public String directUrl() {
      return "jdbc:postgresql://" + ClusterConfig.DIRECT_HOST + ":" + spec.pgPort() + "/postgres";
    }

    /**
     * The postmaster's pid, from its pid file.
     *
     * @return the pid, empty when the file is missing
     */
    public Optional<Long> postmasterPid() {
      Path pidFile = spec.dataDir().resolve("postmaster.pid");
      try {
        List<String> lines = Files.readAllLines(pidFile);
        return lines.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(lines.get(0)));
      } catch (IOException | NumberFormatException e) {
        return Optional.empty();
      }
    }

    /**
     * Patroni's pid.
     *
     * @return the pid of the running agent
     */
    public long agentPid() {
      return agent.pid();
    }

    /**
     * Whether Patroni runs.
     *
     * @return true while its process lives
     */
    public boolean agentAlive() {
      return agent != null && agent.isAlive();
    }

    @Override
    public String toString() {
      return spec.name();
    }
  }

  private final HaSettings settings;
  private final Path work;
  private final Path logs;
  private final int etcdClientPort;
  private final int etcdPeerPort;
  private final int primaryPort;
  private final Path ctlConfig;
  private final List<Node> nodes = new ArrayList<>();
  private final Partition partition;
  private final Partition replicationCut;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofMillis(800)).build();
  private Process etcd;
  private Process haproxy;
  private boolean synchronousMode;

  private PatroniCluster(HaSettings settings, Path logs) throws IOException {
    this.settings = settings;
    this.logs = logs;
    Files.createDirectories(logs);
    this.work =
        Files.createTempDirectory(
            "retsu-ha-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
    this.etcdClientPort = ChildJvm.freePort();
    this.etcdPeerPort = ChildJvm.freePort();
    this.primaryPort = ChildJvm.freePort();
    this.partition = new Partition("retsu_ha_" + ProcessHandle.current().pid());
    this.replicationCut = new Partition("retsu_ha_r" + ProcessHandle.current().pid());
    List<ClusterConfig.NodeSpec> specs = new ArrayList<>();
    for (int i = 1; i <= settings.nodes(); i++) {
      Path home = work.resolve("pg" + i);
      Path socket = work.resolve("s" + i);
      Files.createDirectories(home);
      Files.createDirectories(socket);
      chownToPostgres(home);
      chownToPostgres(socket);
      specs.add(
          new ClusterConfig.NodeSpec(
              "pg" + i,
              ChildJvm.freePort(),
              ChildJvm.freePort(),
              ChildJvm.freePort(),
              home.resolve("data"),
              socket));
    }
    for (ClusterConfig.NodeSpec s : specs) {
      Path config = work.resolve(s.name() + ".yml");
      Files.writeString(config, ClusterConfig.patroni(s, settings));
      nodes.add(new Node(s, config));
    }
    this.ctlConfig = work.resolve("patronictl.yml");
    Files.writeString(ctlConfig, ClusterConfig.patronictl(etcdClientPort));
    Files.writeString(
        work.resolve("haproxy.cfg"), ClusterConfig.haproxy(primaryPort, specs, settings));
  }

  /**
   * Starts etcd, the Patroni nodes (the first bootstraps, the others clone it) and HAProxy, and
   * waits until every node streams from the leader and HAProxy routes to it.
   *
   * @param settings the cluster's settings
   * @param logs where the processes' logs go
   * @return the running cluster
   */
  public static PatroniCluster start(HaSettings settings, Path logs) {
    PatroniCluster c;
    try {
      c = new PatroniCluster(settings, logs);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot lay out the HA cluster", e);
    }
    try {
      c.startEtcd();
      for (Node n : c.nodes) {
        c.startAgent(n);
        if (n == c.nodes.get(0)) {
          c.awaitUntil(
              Duration.ofSeconds(90), "pg1 bootstraps as leader", () -> c.leader().isPresent());
        }
      }
      c.startHaproxy();
      c.awaitHealthy(Duration.ofSeconds(120));
      return c;
    } catch (RuntimeException | Error e) {
      c.close();
      throw e;
    }
  }

  /**
   * The settings it runs with.
   *
   * @return the settings
   */
  public HaSettings settings() {
    return settings;
  }

  /**
   * The nodes.
   *
   * @return pg1, pg2 (, pg3)
   */
  public List<Node> nodes() {
    return List.copyOf(nodes);
  }

  /**
   * A node by name.
   *
   * @param name e.g. {@code pg2}
   * @return the node
   */
  public Node node(String name) {
    return nodes.stream()
        .filter(n -> n.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no node named " + name + " in " + nodes));
  }

  /**
   * The JDBC URL of the primary endpoint (HAProxy).
   *
   * @return the URL
   */
  public String primaryEndpointUrl() {
    return "jdbc:postgresql://" + ClusterConfig.CLUSTER_HOST + ":" + primaryPort + "/postgres";
  }

  /**
   * Where the processes' logs are.
   *
   * @return the directory
   */
  public Path logs() {
    return logs;
  }

  private void startEtcd() {
    Path data = work.resolve("etcd");
    StringBuilder clients = new StringBuilder("http://127.0.0.1:" + etcdClientPort);
    for (Node n : nodes) {
      clients.append(",http://127.0.0.1:").append(n.spec.etcdPort());
    }
    String peer = "http://127.0.0.1:" + etcdPeerPort;
    etcd =
        launch(
            "etcd",
            List.of(
                "/usr/bin/etcd",
                "--name",
                "e1",
                "--data-dir",
                data.toString(),
                "--listen-client-urls",
                clients.toString(),
                "--advertise-client-urls",
                "http://127.0.0.1:" + etcdClientPort,
                "--listen-peer-urls",
                peer,
                "--initial-advertise-peer-urls",
                peer,
                "--initial-cluster",
                "e1=" + peer,
                "--log-level",
                "warn"));
    awaitUntil(
        Duration.ofSeconds(30),
        "etcd answers",
        () -> get("http://127.0.0.1:" + etcdClientPort + "/version").isPresent());
  }

  private void startAgent(Node n) {
    n.agent =
        launch(
            n.name(),
            List.of(
                "/usr/bin/setpriv",
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "/usr/bin/patroni",
                n.config.toString()));
  }

  private void startHaproxy() {
    haproxy =
        launch(
            "haproxy",
            List.of("/usr/sbin/haproxy", "-db", "-f", work.resolve("haproxy.cfg").toString()));
  }

  private Process launch(String name, List<String> command) {
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logs.resolve(name + ".log").toFile()));
    pb.directory(work.toFile());
    pb.environment().put("HOME", work.toString());
    try {
      Process p = pb.start();
      p.getOutputStream().close();
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + name + ": " + command, e);
    }
  }

  // ---------------------------------------------------------------- state

  /**
   * Patroni's view of the cluster, from the first node whose REST API answers.
   *
   * @return the members, empty when no REST API answered
   */
  public List<ClusterConfig.Member> members() {
    for (Node n : nodes) {
      Optional<String> body = get("http://127.0.0.1:" + n.spec.restPort() + "/cluster");
      if (body.isPresent()) {
        return ClusterConfig.members(body.get());
      }
    }
    return List.of();
  }

  /**
   * The node Patroni names leader.
   *
   * @return the leader, if any
   */
  public Optional<Node> leader() {
    return members().stream()
        .filter(m -> m.leader() && m.state().equals("running"))
        .map(m -> node(m.name()))
        .findFirst();
  }

  /**
   * Whether the cluster is whole: a running leader that HAProxy routes to, every other node a
   * running replica on the leader's timeline with no lag, streaming from it, and a synchronous
   * standby exactly when synchronous mode is on.
   *
   * @return empty when healthy, else what is missing
   */
  public Optional<String> unhealthy() {
    List<ClusterConfig.Member> members = members();
    if (members.size() != nodes.size()) {
      return Optional.of("members " + members);
    }
    Optional<ClusterConfig.Member> leader =
        members.stream().filter(m -> m.leader() && m.state().equals("running")).findFirst();
    if (leader.isEmpty()) {
      return Optional.of("no running leader: " + members);
    }
    Node l = node(leader.get().name());
    int timeline;
    int streaming;
    try {
      timeline = query(l, "SELECT " + TIMELINE_SQL);
      streaming =
          query(l, "SELECT count(*)::int FROM pg_stat_replication WHERE state = 'streaming'");
      if (query(l, "SELECT pg_is_in_recovery()::int") != 0) {
        return Optional.of(l + " is in recovery");
      }
    } catch (SQLException e) {
      return Optional.of("leader " + l + " does not answer: " + e.getMessage());
    }
    if (streaming != nodes.size() - 1) {
      return Optional.of(streaming + " replicas stream from " + l);
    }
    boolean sync = false;
    for (ClusterConfig.Member m : members) {
      if (m == leader.get()) {
        continue;
      }
      sync |= m.role().equals("sync_standby");
      if (!m.state().equals("running") || m.lag() != 0 || m.timeline() != timeline) {
        return Optional.of("replica not caught up on timeline " + timeline + ": " + m);
      }
    }
    if (sync != synchronousMode) {
      return Optional.of("synchronous mode " + synchronousMode + " but members " + members);
    }
    try (Connection c = connect(primaryEndpointUrl(), 2);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery(), current_setting('port')::int")) {
      rs.next();
      if (rs.getBoolean(1) || rs.getInt(2) != l.spec.pgPort()) {
        return Optional.of("HAProxy does not route to the leader " + l + " yet");
      }
    } catch (SQLException e) {
      return Optional.of("HAProxy does not answer: " + e.getMessage());
    }
    return Optional.empty();
  }

  /**
   * Waits until {@link #unhealthy()} finds nothing.
   *
   * @param within how long at most
   */
  public void awaitHealthy(Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    Optional<String> why = unhealthy();
    while (why.isPresent()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "the HA cluster is not healthy after " + within + ": " + why.get());
      }
      pause(200);
      why = unhealthy();
    }
  }

  /**
   * The current timeline of a primary, as the library reads it (the WAL file name's first 8 hex
   * digits).
   */
  public static final String TIMELINE_SQL =
      "('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int";

  /**
   * Runs a query returning one int on a node's direct address.
   *
   * @param n the node
   * @param sql the query
   * @return the int
   * @throws SQLException when the node does not answer
   */
  public int query(Node n, String sql) throws SQLException {
    try (Connection c = connect(n.directUrl(), 2);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /**
   * Runs statements on the primary endpoint.
   *
   * @param sql the statements
   * @throws SQLException when they fail
   */
  public void execute(String sql) throws SQLException {
    try (Connection c = connect(primaryEndpointUrl(), 5);
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /**
   * A connection as the superuser, with bounded connect and read times.
   *
   * @param url the JDBC URL
   * @param timeoutSeconds connect and socket timeout
   * @return the connection
   * @throws SQLException when it cannot connect
   */
  public static Connection connect(String url, int timeoutSeconds) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", "postgres");
    p.setProperty("password", "postgres");
    p.setProperty("connectTimeout", Integer.toString(timeoutSeconds));
    p.setProperty("socketTimeout", Integer.toString(timeoutSeconds));
    p.setProperty("ApplicationName", "retsu-ha-harness");
    return DriverManager.getConnection(url, p);
  }

  // ---------------------------------------------------------------- faults

  /**
   * A planned switchover through {@code patronictl switchover --force}.
   *
   * @param from the current leader
   * @param to the replica to promote
   * @return what patronictl printed
   */
  public String switchover(Node from, Node to) {
    HaEnvironment.Result r =
        HaEnvironment.run(
            List.of(
                "/usr/bin/patronictl",
                "-c",
                ctlConfig.toString(),
                "switchover",
                "--leader",
                from.name(),
                "--candidate",
                to.name(),
                "--force"),
            120);
    if (r.status() != 0) {
      throw new IllegalStateException("patronictl switchover failed: " + r.output());
    }
    return r.output();
  }

  /**
   * Sends a signal to a node's postmaster.
   *
   * @param n the node
   * @param signal e.g. {@code KILL}, {@code STOP}, {@code CONT}
   */
  public void signalPostmaster(Node n, String signal) {
    long pid =
        n.postmasterPid()
            .orElseThrow(() -> new IllegalStateException(n + " has no postmaster.pid"));
    signal(pid, signal);
  }

  /**
   * Sends a signal to a node's Patroni.
   *
   * @param n the node
   * @param signal e.g. {@code STOP}, {@code CONT}, {@code KILL}
   */
  public void signalAgent(Node n, String signal) {
    signal(n.agentPid(), signal);
  }

  /**
   * A crash of the whole node: kill -9 of its Patroni, then of its postmaster (whose children exit
   * on its death).
   *
   * @param n the node
   */
  public void crashNode(Node n) {
    signalAgent(n, "KILL");
    n.postmasterPid().ifPresent(pid -> signal(pid, "KILL"));
    try {
      n.agent.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Starts a node's Patroni again after {@link #crashNode}; it recovers its PostgreSQL and rejoins.
   *
   * @param n the node
   */
  public void restartAgent(Node n) {
    if (n.agentAlive()) {
      throw new IllegalStateException(n + "'s Patroni still runs (pid " + n.agentPid() + ")");
    }
    startAgent(n);
  }

  /**
   * Waits until the cluster is healthy; if it is not within {@code within}, repairs the suspect
   * node as an operator would ({@code patronictl reinit}, done by hand: stop its Patroni, kill
   * every PostgreSQL process of its data directory, empty the directory, start Patroni again, which
   * clones the leader), then waits again.
   *
   * @param suspect the node that may be stuck
   * @param within how long it may take to heal by itself
   * @return empty when it healed by itself, else why it had to be repaired
   */
  public Optional<String> awaitHealthyOrRepair(Node suspect, Duration within) {
    try {
      awaitHealthy(within);
      return Optional.empty();
    } catch (IllegalStateException stuck) {
      String why = stuck.getMessage();
      System.err.println("[ha] repairing " + suspect + ": " + why);
      if (suspect.agentAlive()) {
        signal(suspect.agentPid(), "KILL");
        try {
          suspect.agent.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      // A stuck node may run postmasters Patroni lost track of (the double start): kill every
      // PostgreSQL process of its data directory, its pid file and its socket's lock file, until
      // none is left.
      for (int round = 0; round < 50; round++) {
        List<Long> left = postgresProcesses(suspect);
        if (left.isEmpty()) {
          break;
        }
        System.err.println("[ha] killing PostgreSQL processes of " + suspect + ": " + left);
        left.forEach(pid -> signalQuietly(pid, "KILL"));
        pause(200);
      }
      try (Stream<Path> s = Files.walk(suspect.spec.socketDir())) {
        s.filter(p -> !p.equals(suspect.spec.socketDir())).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException e) {
        throw new IllegalStateException("cannot empty " + suspect.spec.socketDir(), e);
      }
      try (Stream<Path> s = Files.walk(suspect.spec.dataDir())) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException e) {
        throw new IllegalStateException("cannot empty " + suspect.spec.dataDir(), e);
      }
      startAgent(suspect);
      awaitHealthy(Duration.ofSeconds(180));
      return Optional.of(why);
    }
  }

  /**
   * Every PostgreSQL process of a node: those whose command line names its data directory, and
   * those its pid file or its socket's lock file name (a postmaster whose directory was removed
   * under it still holds the socket).
   */
  private static List<Long> postgresProcesses(Node n) {
    java.util.Set<Long> out = new java.util.TreeSet<>();
    String dir = n.spec.dataDir().toString();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      procs
          .filter(p -> p.getFileName().toString().matches("[0-9]+"))
          .forEach(
              p -> {
                try {
                  String cmdline = Files.readString(p.resolve("cmdline")).replace('\0', ' ');
                  if (cmdline.contains("postgres") && cmdline.contains(dir)) {
                    out.add(Long.parseLong(p.getFileName().toString()));
                  }
                } catch (IOException | UncheckedIOException gone) {
                  // the process ended meanwhile
                }
              });
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list /proc", e);
    }
    List<Path> pidFiles = new ArrayList<>();
    pidFiles.add(n.spec.dataDir().resolve("postmaster.pid"));
    pidFiles.add(n.spec.socketDir().resolve(".s.PGSQL." + n.spec.pgPort() + ".lock"));
    for (Path f : pidFiles) {
      try {
        List<String> lines = Files.readAllLines(f);
        if (!lines.isEmpty() && lines.get(0).trim().matches("[0-9]+")) {
          long pid = Long.parseLong(lines.get(0).trim());
          String comm = Files.readString(Path.of("/proc", Long.toString(pid), "comm")).trim();
          if (comm.startsWith("postgres")) {
            out.add(pid);
          }
        }
      } catch (IOException | UncheckedIOException missing) {
        // no such file, or the process is gone
      }
    }
    return List.copyOf(out);
  }

  /**
   * Cuts a node off: its cluster-facing PostgreSQL, REST and etcd ports drop every packet.
   *
   * @param n the node
   */
  public void partition(Node n) {
    partition.drop(List.of(n.spec.pgPort(), n.spec.restPort(), n.spec.etcdPort()));
  }

  /** Ends a partition. */
  public void heal() {
    partition.heal();
  }

  /**
   * Replica lag: drops every packet of the replication connections to a primary (found by the
   * replicas' ports in its {@code pg_stat_replication}), so that nothing it writes from now on
   * reaches a replica, while it keeps serving clients, HAProxy, Patroni and the DCS.
   *
   * @param primary the primary
   * @return the replicas' client ports that were cut
   * @throws SQLException when the primary does not answer
   */
  public List<Integer> cutReplication(Node primary) throws SQLException {
    List<Integer> ports = new ArrayList<>();
    try (Connection c = connect(primary.directUrl(), 2);
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT client_port FROM pg_stat_replication WHERE client_port > 0")) {
      while (rs.next()) {
        ports.add(rs.getInt(1));
      }
    }
    if (ports.size() != nodes.size() - 1) {
      throw new IllegalStateException(
          primary + " has " + ports.size() + " replication connections, not " + (nodes.size() - 1));
    }
    replicationCut.drop(ports);
    return ports;
  }

  /** Ends {@link #cutReplication}. */
  public void restoreReplication() {
    replicationCut.heal();
  }

  /**
   * Turns Patroni's {@code synchronous_mode} on or off (PATCH /config) and waits until the cluster
   * shows it.
   *
   * @param on the mode
   */
  public void setSynchronousMode(boolean on) {
    Node l = leader().orElseThrow(() -> new IllegalStateException("no leader to configure"));
    HttpRequest req =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + l.spec.restPort() + "/config"))
            .timeout(Duration.ofSeconds(5))
            .method(
                "PATCH", HttpRequest.BodyPublishers.ofString("{\"synchronous_mode\": " + on + "}"))
            .header("Content-Type", "application/json")
            .build();
    try {
      HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        throw new IllegalStateException(
            "PATCH /config answered " + r.statusCode() + ": " + r.body());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("PATCH /config failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
    synchronousMode = on;
    awaitHealthy(Duration.ofSeconds(60));
  }

  /**
   * Whether synchronous mode is on.
   *
   * @return the mode last set
   */
  public boolean synchronousMode() {
    return synchronousMode;
  }

  /**
   * Sends a signal to a process.
   *
   * @param pid the process
   * @param signal the signal name without SIG
   */
  public static void signal(long pid, String signal) {
    HaEnvironment.Result r =
        HaEnvironment.run(List.of("kill", "-" + signal, Long.toString(pid)), 10);
    if (r.status() != 0) {
      throw new IllegalStateException("kill -" + signal + " " + pid + " failed: " + r.output());
    }
  }

  // ---------------------------------------------------------------- plumbing

  private Optional<String> get(String url) {
    try {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(1)).build(),
              HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      return r.statusCode() == 200 ? Optional.of(r.body()) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private void awaitUntil(Duration within, String what, java.util.function.BooleanSupplier done) {
    long deadline = System.nanoTime() + within.toNanos();
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("timed out after " + within + " waiting until " + what);
      }
      pause(200);
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private static void chownToPostgres(Path p) throws IOException {
    var lookup = p.getFileSystem().getUserPrincipalLookupService();
    Files.setOwner(p, lookup.lookupPrincipalByName("postgres"));
    Files.setAttribute(
        p, "posix:group", lookup.lookupPrincipalByGroupName("postgres"), LinkOption.NOFOLLOW_LINKS);
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
  }

  /**
   * Stops everything it started: the partition, the Patroni agents (which stop PostgreSQL), any
   * postmaster left behind (only those of its own data directories), HAProxy and etcd; then removes
   * the data. Idempotent; never throws.
   */
  @Override
  public void close() {
    for (Partition p : List.of(partition, replicationCut)) {
      try {
        p.heal();
      } catch (RuntimeException e) {
        System.err.println("[ha] cannot remove a partition table: " + e.getMessage());
      }
    }
    for (Node n : nodes) {
      if (n.agent != null && n.agent.isAlive()) {
        try {
          signal(n.agent.pid(), "CONT"); // a frozen agent cannot stop its server
        } catch (RuntimeException e) {
          // gone meanwhile
        }
        n.postmasterPid().ifPresent(pid -> signalQuietly(pid, "CONT"));
        n.agent.destroy();
      }
    }
    for (Node n : nodes) {
      if (n.agent != null) {
        try {
          if (!n.agent.waitFor(40, TimeUnit.SECONDS)) {
            n.agent.destroyForcibly();
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      n.postmasterPid()
          .filter(pid -> ownPostmaster(pid, n))
          .ifPresent(pid -> signalQuietly(pid, "KILL"));
      postgresProcesses(n).forEach(pid -> signalQuietly(pid, "KILL"));
    }
    for (Process p : new Process[] {haproxy, etcd}) {
      if (p != null && p.isAlive()) {
        p.destroy();
        try {
          if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly();
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    try (Stream<Path> s = Files.walk(work)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      System.err.println("[ha] cannot remove " + work + ": " + e.getMessage());
    }
  }

  private static boolean ownPostmaster(long pid, Node n) {
    try {
      String cmdline = Files.readString(Path.of("/proc", Long.toString(pid), "cmdline"));
      return cmdline.contains(n.spec.dataDir().toString());
    } catch (IOException e) {
      return false;
    }
  }

  private static void signalQuietly(long pid, String signal) {
    HaEnvironment.run(List.of("kill", "-" + signal, Long.toString(pid)), 10);
  }
}
