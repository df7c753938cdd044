package dev.retsu.lock.spring.integration;

import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;

/**
 * One node of the two-JVM failover test: an initiator for one role that prints {@code GRANTED} and
 * {@code REVOKED} and runs until it is killed. Arguments: JDBC URL, user, password, role, id.
 */
public final class InitiatorMain {

  private InitiatorMain() {}

  /**
   * Contends for the role until killed; SIGTERM stops the initiator first.
   *
   * @param args url, user, password, role, id
   * @throws InterruptedException never in practice
   */
  public static void main(String[] args) throws InterruptedException {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    if (!args[2].isEmpty()) {
      ds.setPassword(args[2]);
    }
    DefaultCandidate candidate =
        new DefaultCandidate(args[4], args[3]) {
          @Override
          public void onGranted(Context ctx) {
            System.out.println("GRANTED " + getId());
          }

          @Override
          public void onRevoked(Context ctx) {
            System.out.println("REVOKED " + getId());
          }
        };
    RetsuLeaderInitiator initiator =
        RetsuLeaderInitiator.builder(ds, candidate).retryInterval(Duration.ofMillis(200)).build();
    Runtime.getRuntime().addShutdownHook(new Thread(initiator::destroy, "retsu-lock-test-stop"));
    initiator.start();
    System.out.println("STARTED " + args[4]);
    Thread.sleep(Long.MAX_VALUE);
  }
}
