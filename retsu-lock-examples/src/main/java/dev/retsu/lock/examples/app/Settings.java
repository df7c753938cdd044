package dev.retsu.lock.examples.app;

import dev.retsu.lock.TakeoverMode;
import dev.retsu.lock.examples.app.Options.Option;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/** The settings of each subcommand: names, defaults, validation. */
public final class Settings {

  static final Option DATABASE_URL =
      Option.of(
          "RETSU_DATABASE__URL",
          "--database-url",
          null,
          "JDBC URL, e.g. jdbc:postgresql://db:5432/retsu (collector: embedded PostgreSQL if unset)");
  static final Option DATABASE_USER =
      Option.of("RETSU_DATABASE__USER", "--database-user", null, "database user");
  static final Option DATABASE_PASSWORD =
      Option.of("RETSU_DATABASE__PASSWORD", "--database-password", null, "database password");
  static final Option POOL_SIZE =
      Option.of(
          "RETSU_DATABASE__POOL_SIZE",
          "--pool-size",
          "4",
          "HikariCP pool size, fixed; the leader keeps one connection for its term");
  static final Option MANAGEMENT_PORT =
      Option.of(
          "RETSU_WORKER__MANAGEMENT__PORT",
          "--management-port",
          "24350",
          "port of /metrics, /health/live, /health/ready and /leader");
  static final Option MANAGEMENT_ADDRESS =
      Option.of(
          "RETSU_WORKER__MANAGEMENT__ADDRESS",
          "--management-address",
          "0.0.0.0",
          "address the management endpoint binds to");
  static final Option INTERVAL =
      Option.of(
          "RETSU_WORKER__STATE_COLLECTOR__INTERVAL",
          "--interval",
          "15s",
          "standby retry and leader refresh interval (15s, 500ms, PT15S)");
  static final Option TAKEOVER =
      Option.of(
          "RETSU_WORKER__STATE_COLLECTOR__TAKEOVER",
          "--takeover",
          "poll",
          "poll: standby retries every interval, holding no connection; wait: standby blocks in"
              + " pg_advisory_lock on one connection and takes over at once");
  static final Option CANDIDATE_ID =
      Option.of(
          "RETSU_WORKER__STATE_COLLECTOR__CANDIDATE_ID",
          "--candidate-id",
          null,
          "name of this replica in logs, /leader and pg_stat_activity (default host-pid-random)");

  /** Internal: the demo and the tests make their children exit when they do. */
  static final Option PARENT_PID = Option.hidden("RETSU_EXAMPLES__PARENT_PID", "--parent-pid");

  static final Option QUEUES =
      Option.of("RETSU_LOAD__QUEUES", "--queues", "4", "number of queues (queue-1 .. queue-N)");
  static final Option RATE =
      Option.of("RETSU_LOAD__RATE", "--rate", "20", "messages enqueued per second, all queues");
  static final Option DURATION =
      Option.of(
          "RETSU_LOAD__DURATION",
          "--duration",
          null,
          "stop after this long (default: until Ctrl-C)");
  static final Option PROGRESS =
      Option.of(
          "RETSU_LOAD__PROGRESS_INTERVAL",
          "--progress-interval",
          "5s",
          "how often to print progress");

  static final Option COLLECTORS =
      Option.of(null, "--collectors", "3", "collector processes to launch, 2 or 3");
  static final Option DEMO_INTERVAL =
      Option.of(null, "--interval", "2s", "the collectors' retry and refresh interval");
  static final Option BASE_PORT =
      Option.of(null, "--base-port", "24350", "management port of the first collector (+1, +2)");
  static final Option QUICK =
      Option.toggle("--quick", "a shorter run: two collectors, one failover (used by the tests)");

  static final List<Option> DATABASE =
      List.of(DATABASE_URL, DATABASE_USER, DATABASE_PASSWORD, POOL_SIZE);
  static final List<Option> COLLECTOR =
      List.of(
          DATABASE_URL,
          DATABASE_USER,
          DATABASE_PASSWORD,
          POOL_SIZE,
          MANAGEMENT_PORT,
          MANAGEMENT_ADDRESS,
          INTERVAL,
          TAKEOVER,
          CANDIDATE_ID,
          PARENT_PID);
  static final List<Option> LOAD =
      List.of(
          DATABASE_URL,
          DATABASE_USER,
          DATABASE_PASSWORD,
          POOL_SIZE,
          QUEUES,
          RATE,
          DURATION,
          PROGRESS);
  static final List<Option> DEMO = List.of(COLLECTORS, DEMO_INTERVAL, BASE_PORT, QUICK);

  static final Option POSTGRES_PORT =
      Option.of(null, "--port", null, "the TCP port to listen on (default: a free one)");
  static final List<Option> POSTGRES = List.of(POSTGRES_PORT);

  private Settings() {}

  /** Where to connect. {@code url} empty means: start an embedded PostgreSQL. */
  public record Database(
      Optional<String> url, Optional<String> user, Optional<String> password, int poolSize) {

    static Database from(Options o) {
      Optional<String> url = o.string(DATABASE_URL);
      url.ifPresent(u -> checkJdbcUrl(o.source(DATABASE_URL), u));
      return new Database(
          url,
          o.string(DATABASE_USER),
          o.string(DATABASE_PASSWORD),
          o.intWithin(POOL_SIZE, 2, 1000, "a pool size (the leader keeps one connection)"));
    }

    @Override
    public String toString() {
      return "Database[url="
          + url.map(Settings::maskPassword).orElse("(embedded)")
          + ", user="
          + user.orElse("(from URL)")
          + ", password="
          + (password.isPresent() ? "****" : "(none)")
          + ", poolSize="
          + poolSize
          + "]";
    }
  }

  /** The collector worker's settings. */
  public record Collector(
      Database database,
      String managementAddress,
      int managementPort,
      Duration interval,
      TakeoverMode takeover,
      Optional<String> candidateId,
      OptionalLong parentPid) {

    static Collector from(List<String> args, Map<String, String> env) {
      Options o = Options.parse("collector", COLLECTOR, args, env);
      return new Collector(
          Database.from(o),
          o.required(MANAGEMENT_ADDRESS),
          o.port(MANAGEMENT_PORT),
          o.duration(INTERVAL),
          TakeoverMode.valueOf(
              o.choice(TAKEOVER, List.of("poll", "wait")).toUpperCase(java.util.Locale.ROOT)),
          o.string(CANDIDATE_ID),
          readParentPid(o));
    }
  }

  /** The load generator's settings. */
  public record Load(
      Database database,
      int queues,
      int ratePerSecond,
      Optional<Duration> duration,
      Duration progressInterval) {

    /**
     * Reads the load settings.
     *
     * @param args the flags after {@code load}
     * @param env the environment
     * @return the settings
     * @throws ConfigException naming the bad flag or variable and its value
     */
    public static Load from(List<String> args, Map<String, String> env) {
      Options o = Options.parse("load", LOAD, args, env);
      Database db = Database.from(o);
      if (db.url().isEmpty()) {
        throw new ConfigException(
            "RETSU_DATABASE__URL (or --database-url) is required for load: it loads the database"
                + " the collectors watch");
      }
      return new Load(
          db,
          o.intWithin(QUEUES, 1, 100, "a number of queues"),
          o.intWithin(RATE, 1, 100_000, "a rate in messages per second"),
          o.string(DURATION).map(s -> o.duration(DURATION)),
          o.duration(PROGRESS));
    }
  }

  /** The demo's settings. */
  public record Demo(int collectors, Duration interval, int basePort, boolean quick) {

    static Demo from(List<String> args, Map<String, String> env) {
      Options o = Options.parse("demo", DEMO, args, env);
      boolean quick = o.toggle(QUICK);
      int collectors = o.intWithin(COLLECTORS, 2, 3, "a number of collectors");
      if (quick && !o.isSet(COLLECTORS)) {
        collectors = 2;
      }
      Duration interval = o.duration(DEMO_INTERVAL);
      if (quick && !o.isSet(DEMO_INTERVAL)) {
        interval = Duration.ofSeconds(1);
      }
      return new Demo(collectors, interval, o.intWithin(BASE_PORT, 1, 65533, "a TCP port"), quick);
    }
  }

  /** The throwaway PostgreSQL: its port, or empty for a free one. */
  public record Postgres(OptionalInt port) {

    static Postgres from(List<String> args, Map<String, String> env) {
      Options o = Options.parse("postgres", POSTGRES, args, env);
      return new Postgres(
          o.isSet(POSTGRES_PORT)
              ? OptionalInt.of(o.intWithin(POSTGRES_PORT, 1, 65535, "a TCP port"))
              : OptionalInt.empty());
    }
  }

  private static OptionalLong readParentPid(Options o) {
    return o.string(PARENT_PID).isPresent()
        ? OptionalLong.of(o.longWithin(PARENT_PID, 1, Long.MAX_VALUE, "a process id"))
        : OptionalLong.empty();
  }

  static void checkJdbcUrl(String source, String url) {
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new ConfigException(
          source
              + " must be a JDBC URL starting with jdbc:postgresql://, but was '"
              + maskPassword(url)
              + "'");
    }
  }

  /** Hides {@code password} in {@code scheme://user:password@host} and {@code password=...}. */
  static String maskPassword(String url) {
    return url.replaceAll("(//[^/:@]*:)[^@/]*@", "$1****@")
        .replaceAll("(?i)(password=)[^&]*", "$1****");
  }
}
