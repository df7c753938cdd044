package dev.retsu.lock.ha;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.FailoverTiming;
import dev.retsu.lock.FailurePolicy;
import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeadershipLostException;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.Term;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Random;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * One candidate of the HA suite, in its own JVM: a {@link LeaderLoop} (public API only) on one JDBC
 * URL (the primary endpoint behind HAProxy, or one node's direct address for the split-brain
 * probe), whose effect is a write to the downstream fence ({@link Fence}) through the primary
 * endpoint, carrying the term's fencing token.
 *
 * <p>Every line it prints starts with {@code T <System.nanoTime()>} (CLOCK_MONOTONIC, one clock for
 * every process on the machine). Events: {@code READY}; {@code ATTEMPT <result>}; {@code ACQUIRED
 * <term> <token> <pid>}; {@code SERVER <term> <port>} (the node its session is on); {@code CHECK
 * <term> <token>}, right after {@code ensureLeader()} passed; {@code EFFECT <term> <token>
 * <outcome> <startNanos>}, right after the fence write returned, outcome {@code ACCEPTED}, {@code
 * REJECTED} or {@code FAILED:<sqlstate>} (unknown: it may have committed); {@code LOST <term>
 * <reason>}; {@code EXIT <reason>} or {@code STOPPED}.
 *
 * <p>Timing: retry 200 ms, refresh 300 ms, heartbeat 500 ms, self-fencing after 2 s, server
 * keepalives 1 s + 2 x 1 s, {@code idle_session_timeout} 4 s, refresh timeout 3 s, POLL, {@code
 * STEP_DOWN}. A SIGTERM closes the loop from a shutdown hook.
 *
 * <p>Arguments: candidateId lockUrl fenceUrl key seed
 */
public final class HaCandidate {

  private static final PrintStream OUT = System.out;

  private HaCandidate() {}

  static void emit(String event) {
    OUT.println("T " + System.nanoTime() + " " + event);
  }

  /**
   * The loop as the suite configures it.
   *
   * @param ds where to take the lock
   * @param key the key
   * @param id the candidate id
   * @return the builder, ready for a listener
   */
  static dev.retsu.lock.LeaderLoopBuilder loop(PGSimpleDataSource ds, long key, String id) {
    return LeaderLoop.builder(ds, LockKey.of(key))
        .candidateId(id)
        .takeover(TakeoverMode.POLL)
        .failurePolicy(FailurePolicy.STEP_DOWN)
        .retryInterval(Duration.ofMillis(200))
        .refreshInterval(Duration.ofMillis(300))
        .timing(
            FailoverTiming.DEFAULT
                .withHeartbeatInterval(Duration.ofMillis(500))
                .withSelfFenceAfter(Duration.ofSeconds(2))
                .withServerKeepalives(Duration.ofSeconds(1), Duration.ofSeconds(1), 2)
                .withServerIdleSessionTimeout(Duration.ofSeconds(4))
                .withRoundTripTimeout(Duration.ofSeconds(2)))
        .maxBackoff(Duration.ofSeconds(1))
        .closeTimeout(Duration.ofSeconds(3))
        .refreshTimeout(Duration.ofSeconds(3));
  }

  /**
   * Runs the candidate.
   *
   * @param args candidateId lockUrl fenceUrl key seed
   */
  public static void main(String[] args) {
    String id = args[0];
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[1]);
    ds.setUser("postgres");
    ds.setPassword("postgres");
    ds.setConnectTimeout(2);
    Fence.Writer fence = new Fence.Writer(args[2], id);
    long key = Long.parseLong(args[3]);
    Random random = new Random(Long.parseLong(args[4]));
    LeaderLoop loop =
        loop(ds, key, id)
            .listener(
                new LeaderListener() {
                  @Override
                  public void onAcquired(Term term) {
                    emit(
                        "ACQUIRED "
                            + term.number()
                            + " "
                            + term.fencingToken()
                            + " "
                            + term.backendPid());
                  }

                  @Override
                  public void onLost(Term term, LossReason reason, Throwable cause) {
                    emit("LOST " + term.number() + " " + reason);
                  }

                  @Override
                  public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
                    emit("ATTEMPT " + result);
                  }
                })
            .build();
    Runtime.getRuntime().addShutdownHook(new Thread(loop::close, "retsu-lock-ha-shutdown"));
    emit("READY");
    long[] serverShownFor = {-1};
    try {
      loop.run(ctx -> refresh(ctx, random, fence, serverShownFor));
      emit("STOPPED");
    } catch (LeadershipLostException e) {
      emit("EXIT " + e.reason());
      System.exit(3);
    } catch (RuntimeException e) {
      emit("EXIT " + e.getClass().getSimpleName());
      System.exit(4);
    } finally {
      fence.close();
    }
  }

  /** One refresh: a little work, the check, then the effect (the fence write). */
  private static void refresh(
      LeaderContext ctx, Random random, Fence.Writer fence, long[] serverShownFor)
      throws SQLException, InterruptedException {
    long term = ctx.term().number();
    if (serverShownFor[0] != term) {
      serverShownFor[0] = term;
      try (Statement s = ctx.connection().createStatement();
          ResultSet rs = s.executeQuery("SELECT current_setting('port')")) {
        rs.next();
        emit("SERVER " + term + " " + rs.getString(1));
      }
    }
    Thread.sleep(10 + random.nextInt(91));
    ctx.ensureLeader();
    FencingToken token = ctx.fencingToken();
    emit("CHECK " + term + " " + token);
    long start = System.nanoTime();
    String outcome = fence.write(term, token, start);
    emit("EFFECT " + term + " " + token + " " + outcome + " " + start);
  }

  /** The downstream system: a table on the cluster that rejects stale tokens. */
  public static final class Fence {

    private Fence() {}

    /** The tables; run once on the primary endpoint. */
    public static final String SCHEMA =
        "CREATE TABLE IF NOT EXISTS retsu_ha_fence (id int PRIMARY KEY, token text COLLATE \"C\""
            + " NOT NULL, version bigint NOT NULL);"
            + " INSERT INTO retsu_ha_fence VALUES (1, '', 0) ON CONFLICT DO NOTHING;"
            + " CREATE TABLE IF NOT EXISTS retsu_ha_effects (candidate text NOT NULL,"
            + " term bigint NOT NULL, token text NOT NULL, timeline int NOT NULL, xid bigint NOT NULL,"
            + " start_nanos bigint NOT NULL, version bigint,"
            + " at timestamptz NOT NULL DEFAULT clock_timestamp())";

    /**
     * One effect: accepted (the fence moves to this token, its version grows) only if the token is
     * not older than the fence's; logged either way. The fence row's lock serialises writers, so
     * the decision and the version follow commit order.
     */
    static final String WRITE =
        "WITH f AS (UPDATE retsu_ha_fence SET token = ?, version = version + 1"
            + " WHERE id = 1 AND token <= ? RETURNING version) INSERT INTO retsu_ha_effects"
            + " (candidate, term, token, timeline, xid, start_nanos, version)"
            + " SELECT ?, ?, ?, ?, ?, ?, (SELECT version FROM f) RETURNING version";

    /** A candidate's connection to the fence, opened again after any failure. */
    public static final class Writer implements AutoCloseable {
      private final String url;
      private final String candidate;
      private Connection connection;

      Writer(String url, String candidate) {
        this.url = url;
        this.candidate = candidate;
      }

      /**
       * Writes one effect.
       *
       * @return ACCEPTED, REJECTED or FAILED:sqlstate
       */
      String write(long term, FencingToken token, long startNanos) {
        try {
          if (connection == null) {
            connection = PatroniCluster.connect(url, 2);
          }
          try (PreparedStatement ps = connection.prepareStatement(WRITE)) {
            ps.setString(1, token.toString()); // the token's one comparable form
            ps.setString(2, token.toString());
            ps.setString(3, candidate);
            ps.setLong(4, term);
            ps.setString(5, token.toString());
            ps.setInt(6, token.timeline());
            ps.setLong(7, token.xid());
            ps.setLong(8, startNanos);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              rs.getLong(1);
              return rs.wasNull() ? "REJECTED" : "ACCEPTED";
            }
          }
        } catch (SQLException e) {
          close();
          return "FAILED:" + (e.getSQLState() == null ? "none" : e.getSQLState());
        }
      }

      @Override
      public void close() {
        if (connection != null) {
          try {
            connection.close();
          } catch (SQLException e) {
            // the connection is broken already; a new one is opened on the next write
          }
          connection = null;
        }
      }
    }
  }
}
