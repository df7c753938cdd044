package dev.retsu.lock.internal.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.fakes.TestKeys;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The session's own promises to the layers above, on a real server: a failed token statement leaves
 * no transaction open, so the keys the batch just took can be unlocked in the next statement.
 */
@ExtendWith(PostgresExtension.class)
class LockSessionIntegrationTest {

  private static LockSession open(TestDatabase db, LockKey key) {
    Duration timeout = Duration.ofSeconds(5);
    return SessionOpener.open(
        new SessionOpener.Spec(
            db.dataSource(),
            key,
            "unit",
            "[key=" + key + ", candidate=unit]",
            "retsu-lock:unit",
            Map.of(),
            timeout,
            Duration.ofSeconds(1),
            Duration.ofSeconds(30),
            TimeSource.SYSTEM));
  }

  /**
   * A token statement that fails inside a transaction the session was left in (here one a failed
   * statement aborted) rolls it back: the session is in autocommit with no transaction open, and
   * the key it took is unlocked by the next statement.
   */
  @Test
  void aFailedTokenLeavesNoTransactionOpenSoTheKeysCanBeUnlocked(TestDatabase db) throws Exception {
    LockKey key = TestKeys.next();
    LockSession s = open(db, key);
    try {
      assertThat(s.tryLock(List.of(key), 1)).containsExactly(key);
      s.call(
          c -> {
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
              st.execute("SELECT 1 / 0");
            } catch (SQLException expected) {
              // 22012: the transaction is now aborted
            }
            return null;
          });

      assertThatThrownBy(() -> s.fencingToken(List.of(key)))
          .isInstanceOf(SQLException.class)
          .extracting(e -> ((SQLException) e).getSQLState())
          .isEqualTo("25P02");

      boolean autocommit = s.call(c -> c.getAutoCommit());
      PgSession.Transaction tx = s.call(PgSession::transaction);
      assertThat(autocommit).isTrue();
      assertThat(tx).isEqualTo(PgSession.Transaction.IDLE);
      s.unlock(List.of(key));
      assertThat(db.advisoryLocksHeldBy(s.id().pid())).isZero();
    } finally {
      s.end();
    }
  }
}
