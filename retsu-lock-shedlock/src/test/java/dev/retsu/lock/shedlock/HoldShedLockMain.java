package dev.retsu.lock.shedlock;

import java.time.Duration;
import java.time.Instant;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A node that takes one ShedLock lock for ten minutes and keeps it until it is killed, for the
 * crash tests. Arguments: JDBC URL, user, password, lock name. Prints {@code LOCKED <pid>}.
 */
public final class HoldShedLockMain {

  private HoldShedLockMain() {}

  /**
   * Takes the lock and waits to be killed.
   *
   * @param args url, user, password, lock name
   * @throws Exception when the lock cannot be taken
   */
  public static void main(String[] args) throws Exception {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].isEmpty()) {
      ds.setPassword(args[2]);
    }
    RetsuLockProvider provider = RetsuLockProvider.builder(ds).candidateId("child").build();
    SimpleLock lock =
        provider
            .lock(
                new LockConfiguration(
                    Instant.now(), args[3], Duration.ofMinutes(10), Duration.ZERO))
            .orElseThrow(() -> new IllegalStateException("lock " + args[3] + " is held elsewhere"));
    System.out.println("LOCKED " + provider.lease(args[3]).orElseThrow().backendPid());
    Thread.sleep(Long.MAX_VALUE);
    lock.unlock();
  }
}
