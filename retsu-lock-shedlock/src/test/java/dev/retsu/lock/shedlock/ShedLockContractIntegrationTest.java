package dev.retsu.lock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.SQLException;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * ShedLock's own contract for an {@link ExtensibleLockProvider}, unchanged: every test of its
 * {@code AbstractLockProviderIntegrationTest} (not re-entrant, {@code lockAtMostFor} frees the lock
 * after twice its length, {@code lockAtLeastFor} survives {@code unlock()}, locking right after
 * unlocking, its fuzz tester's eight threads on two locks) and of {@code
 * AbstractExtensibleLockProviderIntegrationTest} (extend once and again, never after unlock, expiry
 * or an earlier extend), against PostgreSQL through a HikariCP pool.
 *
 * <p>{@link #assertLocked}/{@link #assertUnlocked} read {@code pg_locks} on a separate session: the
 * server's own view, not the provider's.
 */
@ExtendWith(PostgresExtension.class)
class ShedLockContractIntegrationTest extends AbstractExtensibleLockProviderIntegrationTest {

  private TestDatabase db;
  private HikariDataSource pool;
  private RetsuLockProvider provider;

  @BeforeEach
  void start(TestDatabase db) {
    this.db = db;
    this.pool = ShedLockTesting.pool(db, 12);
    this.provider = RetsuLockProvider.builder(pool).candidateId("contract").build();
  }

  @AfterEach
  void stop() {
    provider.close();
    pool.close();
  }

  // The contract tests docs/shedlock.md cites by name, declared here so that the docs check finds
  // them in this repository; each runs ShedLock's own test body unchanged.

  @Override
  @Test
  public void shouldNotReturnSecondLock() {
    super.shouldNotReturnSecondLock();
  }

  @Override
  @Test
  public void shouldBeAbleToLockRightAfterUnlock() {
    super.shouldBeAbleToLockRightAfterUnlock();
  }

  @Override
  @Test
  public void shouldLockAtLeastFor() throws InterruptedException {
    super.shouldLockAtLeastFor();
  }

  @Override
  @Test
  public void shouldBeAbleToExtendLock() {
    super.shouldBeAbleToExtendLock();
  }

  @Override
  @Test
  public void shouldBeAbleToExtendMultipleTimes() {
    super.shouldBeAbleToExtendMultipleTimes();
  }

  @Override
  @Test
  public void shouldNotBeAbleToExtendUnlockedLock() {
    super.shouldNotBeAbleToExtendUnlockedLock();
  }

  @Override
  @Test
  public void shouldNotBeAbleToExtendExpiredLock() {
    super.shouldNotBeAbleToExtendExpiredLock();
  }

  @Override
  @Test
  public void shouldBeAbleToExtendAtLeast() {
    super.shouldBeAbleToExtendAtLeast();
  }

  @Override
  @Test
  public void lockCanNotBeExtendedTwice() {
    super.lockCanNotBeExtendedTwice();
  }

  @Override
  @Test
  public void lockCanNotBeUnlockedAfterExtending() {
    super.lockCanNotBeUnlockedAfterExtending();
  }

  @Override
  protected ExtensibleLockProvider getLockProvider() {
    return provider;
  }

  @Override
  protected void assertLocked(String lockName) {
    assertThat(holders(lockName)).as("sessions holding %s", lockName).isEqualTo(1);
  }

  @Override
  protected void assertUnlocked(String lockName) {
    assertThat(holders(lockName)).as("sessions holding %s", lockName).isZero();
  }

  private int holders(String lockName) {
    try {
      return ShedLockTesting.holders(db, provider.key(lockName));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
