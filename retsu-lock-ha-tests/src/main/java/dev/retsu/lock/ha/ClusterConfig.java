package dev.retsu.lock.ha;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The configuration files of the cluster, as text: one Patroni YAML per node, patronictl's, and
 * HAProxy's. Everything listens on loopback. Each PostgreSQL node listens on two addresses with one
 * port: {@code 127.0.0.1} is its cluster-facing address (replication, HAProxy, Patroni's peers) and
 * {@code 127.0.1.1} its direct address (the monitor and the split-brain probe: clients on the old
 * primary's side of a partition). Each node's Patroni reaches etcd on a port of its own, so that
 * one node can be cut from the DCS by port alone.
 */
public final class ClusterConfig {

  /** Patroni's cluster name (scope). */
  public static final String SCOPE = "retsu-ha";

  /** The DCS namespace. */
  public static final String NAMESPACE = "/retsu-ha/";

  /** The cluster-facing address of every node. */
  public static final String CLUSTER_HOST = "127.0.0.1";

  /** The direct address of every node, on the same port. */
  public static final String DIRECT_HOST = "127.0.1.1";

  /**
   * One node's ports and places.
   *
   * @param name its Patroni name, {@code pg1} ...
   * @param pgPort PostgreSQL's port, on both addresses
   * @param restPort Patroni's REST API
   * @param etcdPort the etcd client port only this node's Patroni uses
   * @param dataDir PostgreSQL's data directory
   * @param socketDir its Unix socket directory (Patroni's own connection goes there)
   */
  public record NodeSpec(
      String name, int pgPort, int restPort, int etcdPort, Path dataDir, Path socketDir) {}

  private ClusterConfig() {}

  /**
   * One node's Patroni configuration.
   *
   * @param node the node
   * @param settings the DCS timing
   * @return the YAML text
   */
  public static String patroni(NodeSpec node, HaSettings settings) {
    return String.join(
        "\n",
        "scope: " + SCOPE,
        "namespace: " + NAMESPACE,
        "name: " + node.name(),
        "log:",
        "  level: INFO",
        "restapi:",
        "  listen: " + CLUSTER_HOST + ":" + node.restPort(),
        "  connect_address: " + CLUSTER_HOST + ":" + node.restPort(),
        "etcd3:",
        "  hosts: " + CLUSTER_HOST + ":" + node.etcdPort(),
        // no topology discovery: this node talks to etcd on its own port only
        "  use_proxies: true",
        "bootstrap:",
        "  dcs:",
        "    ttl: " + settings.ttl(),
        "    loop_wait: " + settings.loopWait(),
        "    retry_timeout: " + settings.retryTimeout(),
        "    maximum_lag_on_failover: 1048576",
        "    synchronous_mode: false",
        "    postgresql:",
        "      use_pg_rewind: true",
        "      use_slots: true",
        "      parameters:",
        "        wal_level: replica",
        "        hot_standby: 'on'",
        "        wal_log_hints: 'on'",
        "        max_wal_senders: 10",
        "        max_replication_slots: 10",
        "        wal_keep_size: 128MB",
        "        max_connections: 80",
        "        shared_buffers: 32MB",
        "  initdb:",
        "  - encoding: UTF8",
        "  - data-checksums",
        "  pg_hba:",
        "  - local all all trust",
        "  - host replication all 127.0.0.0/8 trust",
        "  - host all all 127.0.0.0/8 trust",
        "postgresql:",
        "  listen: " + CLUSTER_HOST + "," + DIRECT_HOST + ":" + node.pgPort(),
        "  connect_address: " + CLUSTER_HOST + ":" + node.pgPort(),
        "  use_unix_socket: true",
        "  data_dir: " + node.dataDir(),
        "  bin_dir: " + HaEnvironment.PG_BIN,
        "  pgpass: " + node.dataDir().resolveSibling(node.name() + ".pgpass"),
        "  authentication:",
        "    replication: {username: replicator, password: replicator}",
        "    superuser: {username: postgres, password: postgres}",
        "    rewind: {username: postgres, password: postgres}",
        "  parameters:",
        "    unix_socket_directories: '" + node.socketDir() + "'",
        "  remove_data_directory_on_rewind_failure: true",
        "  remove_data_directory_on_diverged_timelines: true",
        "");
  }

  /**
   * patronictl's configuration: the DCS only.
   *
   * @param etcdPort the etcd client port it uses
   * @return the YAML text
   */
  public static String patronictl(int etcdPort) {
    return String.join(
        "\n",
        "scope: " + SCOPE,
        "namespace: " + NAMESPACE,
        "etcd3:",
        "  hosts: " + CLUSTER_HOST + ":" + etcdPort,
        "  use_proxies: true",
        "");
  }

  /**
   * HAProxy in front of the nodes: the usual Patroni primary endpoint, a TCP proxy that sends each
   * new connection to the node whose REST API answers {@code /primary} with 200, and closes the
   * sessions of a server once it is marked down.
   *
   * @param port the primary endpoint's port (Patroni's examples use 5000)
   * @param nodes the nodes
   * @param settings the health-check interval
   * @return the configuration text
   */
  public static String haproxy(int port, List<NodeSpec> nodes, HaSettings settings) {
    StringBuilder b = new StringBuilder();
    b.append("global\n  maxconn 400\n\n");
    b.append("defaults\n  mode tcp\n  retries 2\n  timeout connect 1s\n")
        .append("  timeout client 30m\n  timeout server 30m\n  timeout check 1s\n\n");
    b.append("listen primary\n  bind ").append(CLUSTER_HOST).append(':').append(port).append('\n');
    b.append("  option httpchk OPTIONS /primary\n  http-check expect status 200\n");
    b.append("  default-server inter ")
        .append(settings.checkIntervalMillis())
        .append("ms fall 2 rise 1 on-marked-down shutdown-sessions\n");
    for (NodeSpec n : nodes) {
      b.append("  server ")
          .append(n.name())
          .append(' ')
          .append(CLUSTER_HOST)
          .append(':')
          .append(n.pgPort())
          .append(" maxconn 100 check port ")
          .append(n.restPort())
          .append('\n');
    }
    return b.toString();
  }

  /**
   * One member of Patroni's {@code GET /cluster} answer.
   *
   * @param name the node
   * @param role leader, replica, sync_standby, ...
   * @param state running, stopped, crashed, starting, ...
   * @param timeline its timeline, -1 when not given
   * @param lag its replication lag in bytes, -1 when not given or unknown
   */
  public record Member(String name, String role, String state, int timeline, long lag) {

    /** Whether it is the leader. */
    public boolean leader() {
      return role.equals("leader") || role.equals("master") || role.equals("primary");
    }
  }

  private static final Pattern OBJECT = Pattern.compile("\\{[^{}]*\\}");

  /**
   * Reads the members from a {@code GET /cluster} answer (Patroni 3.0: flat member objects).
   *
   * @param json the answer
   * @return the members, in the answer's order
   */
  public static List<Member> members(String json) {
    List<Member> out = new java.util.ArrayList<>();
    Matcher m = OBJECT.matcher(json);
    while (m.find()) {
      String o = m.group();
      Map<String, String> f = fields(o);
      if (f.containsKey("name") && f.containsKey("role")) {
        out.add(
            new Member(
                f.get("name"),
                f.get("role"),
                f.getOrDefault("state", ""),
                number(f.get("timeline")),
                f.containsKey("lag") ? longNumber(f.get("lag")) : -1));
      }
    }
    return out;
  }

  private static final Pattern FIELD =
      Pattern.compile("\"([a-z_]+)\"\\s*:\\s*(\"([^\"]*)\"|(-?[0-9]+)|null|true|false)");

  private static Map<String, String> fields(String object) {
    Map<String, String> f = new java.util.HashMap<>();
    Matcher m = FIELD.matcher(object);
    while (m.find()) {
      f.put(m.group(1), m.group(3) != null ? m.group(3) : m.group(4));
    }
    return f;
  }

  /** A number, or -1 for none, null or a text such as Patroni's {@code "unknown"} lag. */
  private static int number(String s) {
    return (int) longNumber(s);
  }

  private static long longNumber(String s) {
    return s == null || !s.matches("-?[0-9]+") ? -1 : Long.parseLong(s);
  }
}
