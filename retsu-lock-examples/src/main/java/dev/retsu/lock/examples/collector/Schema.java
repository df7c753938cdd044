package dev.retsu.lock.examples.collector;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The queue tables, created if missing. Idempotent and safe when several workers start together:
 * the migration runs in one transaction under a transaction-level advisory lock on a key of its own
 * (never the collector's key), so concurrent {@code CREATE ... IF NOT EXISTS} cannot race.
 *
 * <ul>
 *   <li>{@code retsu_queue_message}: one row per message, in state {@code ready}, {@code
 *       in_flight}, {@code scheduled} (not before {@code available_at}) or {@code dead}.
 *   <li>{@code retsu_queue_state}: the per-queue rollup the collector reads. Statement-level
 *       triggers with transition tables keep it exact in the same transaction as every queue
 *       operation, whoever runs it (the {@code load} command or psql).
 * </ul>
 */
public final class Schema {

  /** First part of the migration's transaction lock: 'RETS'. Second part: 2. */
  public static final int KEY_NAMESPACE = 0x52455453;

  /** Second part of the migration's transaction lock. */
  public static final int MIGRATION_KEY = 2;

  // No CHECK (n >= 0) on the rollup counts: PostgreSQL checks constraints on the row an upsert
  // proposes to insert before it finds the conflict, and that row carries the (negative) delta.
  private static final String DDL =
      """
      CREATE TABLE IF NOT EXISTS retsu_queue_message (
        id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        queue        text        NOT NULL,
        state        text        NOT NULL
                     CHECK (state IN ('ready', 'in_flight', 'scheduled', 'dead')),
        available_at timestamptz NOT NULL DEFAULT now(),
        enqueued_at  timestamptz NOT NULL DEFAULT now(),
        payload      text
      );
      CREATE INDEX IF NOT EXISTS retsu_queue_message_queue_state
        ON retsu_queue_message (queue, state, available_at);

      CREATE TABLE IF NOT EXISTS retsu_queue_state (
        queue      text        PRIMARY KEY,
        ready      bigint      NOT NULL DEFAULT 0,
        in_flight  bigint      NOT NULL DEFAULT 0,
        scheduled  bigint      NOT NULL DEFAULT 0,
        dead       bigint      NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      """;

  private static final String FUNCTION =
      """
      CREATE OR REPLACE FUNCTION retsu_queue_state_apply() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      BEGIN
        -- d(queue, state, n): +1 per new row, -1 per old row of this statement.
        IF TG_OP = 'INSERT' THEN
          %1$s (SELECT queue, state, 1 AS n FROM new_rows) d %2$s
        ELSIF TG_OP = 'DELETE' THEN
          %1$s (SELECT queue, state, -1 AS n FROM old_rows) d %2$s
        ELSE
          %1$s (SELECT queue, state, 1 AS n FROM new_rows
                UNION ALL SELECT queue, state, -1 FROM old_rows) d %2$s
        END IF;
        RETURN NULL;
      END
      $fn$;
      """
          .formatted(
              """
              INSERT INTO retsu_queue_state AS s (queue, ready, in_flight, scheduled, dead)
              SELECT queue,
                     coalesce(sum(n) FILTER (WHERE state = 'ready'), 0),
                     coalesce(sum(n) FILTER (WHERE state = 'in_flight'), 0),
                     coalesce(sum(n) FILTER (WHERE state = 'scheduled'), 0),
                     coalesce(sum(n) FILTER (WHERE state = 'dead'), 0)
              FROM""",
              // One upsert per queue, in queue order: concurrent writers lock rollup rows in the
              // same order and cannot deadlock on them.
              """
              GROUP BY queue ORDER BY queue
              ON CONFLICT (queue) DO UPDATE SET
                ready = s.ready + EXCLUDED.ready, in_flight = s.in_flight + EXCLUDED.in_flight,
                scheduled = s.scheduled + EXCLUDED.scheduled, dead = s.dead + EXCLUDED.dead,
                updated_at = now();""");

  private static final String TRIGGERS =
      """
      DROP TRIGGER IF EXISTS retsu_queue_state_insert ON retsu_queue_message;
      DROP TRIGGER IF EXISTS retsu_queue_state_update ON retsu_queue_message;
      DROP TRIGGER IF EXISTS retsu_queue_state_delete ON retsu_queue_message;
      CREATE TRIGGER retsu_queue_state_insert AFTER INSERT ON retsu_queue_message
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION retsu_queue_state_apply();
      CREATE TRIGGER retsu_queue_state_update AFTER UPDATE ON retsu_queue_message
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION retsu_queue_state_apply();
      CREATE TRIGGER retsu_queue_state_delete AFTER DELETE ON retsu_queue_message
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION retsu_queue_state_apply();
      """;

  private Schema() {}

  /**
   * Creates the tables, the rollup function and its triggers if missing; commits or rolls back.
   *
   * @param c a connection in auto-commit mode; it is left in auto-commit mode
   * @throws SQLException on a database error
   */
  public static void migrate(Connection c) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute("SELECT pg_advisory_xact_lock(" + KEY_NAMESPACE + ", " + MIGRATION_KEY + ")");
      s.execute(DDL);
      s.execute(FUNCTION);
      s.execute(TRIGGERS);
      c.commit();
    } catch (SQLException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(autoCommit);
    }
  }
}
