package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.SqlFunction;
import dev.retsu.lock.Term;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * The context of a leader in {@code test-mode: always-leader}: a term without a database. It leads
 * until the leader stops; there is no lease connection ({@link RetsuLeader#dataSource()} lends the
 * application's pooled connections instead, when it has a DataSource). Thread-safe.
 */
final class TestModeContext implements LeaderContext {

  private final String leader;
  private final Term term;
  private volatile boolean ended;

  TestModeContext(String leader, Term term) {
    this.leader = leader;
    this.term = term;
  }

  void end() {
    ended = true;
  }

  @Override
  public Term term() {
    return term;
  }

  @Override
  public Connection connection() {
    throw new UnsupportedOperationException(
        "retsu-lock leader '"
            + leader
            + "' runs with test-mode ALWAYS_LEADER: there is no lease connection; use"
            + " RetsuLeader.dataSource() or jdbcTemplate(), which lend the application's DataSource"
            + " in test mode");
  }

  @Override
  public <T> T withConnection(SqlFunction<T> work) throws SQLException {
    return work.apply(connection());
  }

  @Override
  public boolean isLeader() {
    return !ended;
  }

  @Override
  public void ensureLeader() {
    if (ended) {
      throw new LeadershipLostException(
          LossReason.CLOSED,
          "Test-mode term of '" + leader + "' is over",
          term.key(),
          term.candidateId(),
          null);
    }
  }

  @Override
  public void proveLeader() {
    ensureLeader();
  }
}
