package dev.retsu.lock.ha;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;

/**
 * A network partition of one node on loopback, as kernel packet drops (nftables, root): every
 * packet to or from the node's cluster-facing address on its PostgreSQL, REST and etcd ports is
 * dropped, in both directions, without RST or FIN. The node is cut from the DCS, from its peers and
 * from HAProxy; clients on its side (its direct address) still reach it. One table per instance,
 * removed by {@link #heal()}.
 */
public final class Partition {

  private final String table;
  private final ReentrantLock lock = new ReentrantLock();
  private boolean applied;

  /**
   * A partition whose rules live in its own table.
   *
   * @param table the nftables table name (letters, digits, underscores)
   */
  public Partition(String table) {
    if (!table.matches("[a-z][a-z0-9_]{0,30}")) {
      throw new IllegalArgumentException(
          "table must be lowercase letters, digits and underscores, but was " + table);
    }
    this.table = table;
  }

  /**
   * The nftables script that drops a node's ports.
   *
   * @param table the table
   * @param ports the ports to drop, on the cluster-facing address
   * @return the script
   */
  static String script(String table, List<Integer> ports) {
    String set = ports.stream().map(String::valueOf).collect(Collectors.joining(", "));
    return "table inet "
        + table
        + " {\n  chain out { type filter hook output priority -10; policy accept;\n"
        + "    ip daddr "
        + ClusterConfig.CLUSTER_HOST
        + " tcp dport { "
        + set
        + " } drop\n    ip saddr "
        + ClusterConfig.CLUSTER_HOST
        + " tcp sport { "
        + set
        + " } drop\n  }\n}\n";
  }

  /**
   * Drops the ports now.
   *
   * @param ports the node's PostgreSQL, REST and etcd ports
   */
  public void drop(List<Integer> ports) {
    lock.lock();
    try {
      heal();
      nft(script(table, ports));
      applied = true;
    } finally {
      lock.unlock();
    }
  }

  /** Removes the drops; idempotent. */
  public void heal() {
    lock.lock();
    try {
      if (applied) {
        nft("delete table inet " + table + "\n");
        applied = false;
      }
    } finally {
      lock.unlock();
    }
  }

  private static void nft(String script) {
    try {
      Process p = new ProcessBuilder("/usr/sbin/nft", "-f", "-").redirectErrorStream(true).start();
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
