package dev.retsu.lock.examples.load;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.examples.app.LoadCommand;
import dev.retsu.lock.examples.app.Settings;
import dev.retsu.lock.examples.collector.Schema;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The load generator and the {@code load} command; the rollup triggers keep up with both. */
@ExtendWith(PostgresExtension.class)
class QueueLoadIntegrationTest {

  @BeforeEach
  void schema(TestDatabase db) throws Exception {
    try (Connection c = db.connect()) {
      Schema.migrate(c);
    }
    db.execute("TRUNCATE retsu_queue_message; TRUNCATE retsu_queue_state");
  }

  @Test
  void theRollupStaysExactUnderTheLoad(TestDatabase db) throws Exception {
    QueueLoad load = new QueueLoad(db.dataSource(), 3, 200, 7);
    load.seed(30);
    for (int i = 0; i < 15; i++) {
      load.tick();
    }
    // a manual change, as psql would make: the triggers count it too
    db.execute(
        "UPDATE retsu_queue_message SET state = 'dead' WHERE id IN (SELECT id FROM"
            + " retsu_queue_message WHERE state = 'ready' ORDER BY id LIMIT 5);"
            + " DELETE FROM retsu_queue_message WHERE id IN (SELECT id FROM retsu_queue_message"
            + " WHERE state = 'dead' ORDER BY id LIMIT 2)");

    assertThat(rollup(db)).isEqualTo(truth(db)).isNotEmpty();
    QueueLoad.Totals totals = load.totals();
    assertThat(totals.enqueued()).isGreaterThan(90);
    assertThat(totals.consumed()).isPositive();
  }

  @Test
  void theLoadCommandRunsForABoundedTimeAndPrintsProgress(TestDatabase db) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Settings.Load settings =
        Settings.Load.from(
            List.of("--duration", "1500ms", "--progress-interval", "500ms", "--rate", "50"),
            db.password().isEmpty()
                ? Map.of("RETSU_DATABASE__URL", db.jdbcUrl(), "RETSU_DATABASE__USER", db.user())
                : Map.of(
                    "RETSU_DATABASE__URL", db.jdbcUrl(),
                    "RETSU_DATABASE__USER", db.user(),
                    "RETSU_DATABASE__PASSWORD", db.password()));

    int status = LoadCommand.run(settings, new PrintStream(out, true, StandardCharsets.UTF_8));

    String text = out.toString(StandardCharsets.UTF_8);
    assertThat(status).as(text).isZero();
    assertThat(text)
        .contains("load: 4 queues (queue-1 .. queue-4), 50 msg/s for 1500ms")
        .containsPattern("load: 4 queues at 50 msg/s \\| enqueued [1-9]\\d*, consumed \\d+");
  }

  private static Map<String, List<Long>> rollup(TestDatabase db) throws Exception {
    return rows(
        db,
        "SELECT queue, ready, in_flight, scheduled, dead FROM retsu_queue_state"
            + " WHERE ready + in_flight + scheduled + dead > 0");
  }

  private static Map<String, List<Long>> truth(TestDatabase db) throws Exception {
    return rows(
        db,
        "SELECT queue, count(*) FILTER (WHERE state = 'ready'),"
            + " count(*) FILTER (WHERE state = 'in_flight'),"
            + " count(*) FILTER (WHERE state = 'scheduled'),"
            + " count(*) FILTER (WHERE state = 'dead') FROM retsu_queue_message GROUP BY queue");
  }

  private static Map<String, List<Long>> rows(TestDatabase db, String sql) throws Exception {
    Map<String, List<Long>> out = new TreeMap<>();
    try (Connection c = db.connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        out.put(
            rs.getString(1), List.of(rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5)));
      }
    }
    return out;
  }
}
