package dev.retsu.lock.spring.integration;

import dev.retsu.lock.testing.TestDatabase;
import dev.retsu.lock.testing.TestPostgres;
import java.util.concurrent.locks.Lock;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.SmartLifecycleRoleController;

/**
 * Runs the module's classes, built against Spring Integration 7.1, on Spring Integration 6.5 and
 * Spring Framework 6.2 against PostgreSQL (the {@code spring-integration-6.5} profile puts those
 * jars on the class path instead): the initiator grants and revokes a role through {@code
 * SmartLifecycleRoleController}, and the registry locks, proves a re-entrant hold, renews and
 * unlocks. Exits non-zero on the first failure.
 */
public final class SpringIntegration65Check {
  private static volatile boolean running;

  private SpringIntegration65Check() {}

  /**
   * Runs the check.
   *
   * @param args none
   * @throws Exception on the first failure
   */
  public static void main(String[] args) throws Exception {
    try (TestDatabase db =
        TestDatabase.create(TestPostgres.shared(), "spring_integration_65_check")) {
      GenericApplicationContext ctx = new GenericApplicationContext();
      SmartLifecycle endpoint =
          new SmartLifecycle() {
            public void start() {
              running = true;
            }

            public void stop() {
              running = false;
            }

            public boolean isRunning() {
              return running;
            }

            public boolean isAutoStartup() {
              return false;
            }
          };
      SmartLifecycleRoleController roles = new SmartLifecycleRoleController();
      roles.addLifecycleToRole("r", endpoint);
      ctx.registerBean("roles", SmartLifecycleRoleController.class, () -> roles);
      ctx.registerBean("endpoint", SmartLifecycle.class, () -> endpoint);
      ctx.registerBean(
          "initiator",
          RetsuLeaderInitiator.class,
          () ->
              RetsuLeaderInitiator.builder(db.dataSource(), new DefaultCandidate("n", "r"))
                  .build());
      ctx.refresh();
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (!running && System.nanoTime() < deadline) Thread.sleep(20);
      if (!running) throw new AssertionError("role not started");
      ctx.getBean(RetsuLeaderInitiator.class).stop();
      if (running) throw new AssertionError("role not stopped");
      ctx.close();
      RetsuLockRegistry reg = RetsuLockRegistry.of(db.dataSource());
      Lock l = reg.obtain("k");
      if (!l.tryLock()) throw new AssertionError("tryLock");
      if (!l.tryLock()) throw new AssertionError("reentrant tryLock");
      reg.renewLock("k");
      l.unlock();
      l.unlock();
      System.out.println(
          "SI65 OK spring "
              + org.springframework.core.SpringVersion.getVersion()
              + " integration "
              + org.springframework.integration.support.locks.LockRegistry.class
                  .getPackage()
                  .getImplementationVersion());
    }
    System.exit(0);
  }
}
