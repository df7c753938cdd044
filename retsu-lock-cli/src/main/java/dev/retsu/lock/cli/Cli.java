package dev.retsu.lock.cli;

import dev.retsu.lock.AdvisoryLockException;
import dev.retsu.lock.LeaderChange;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderWatch;
import dev.retsu.lock.LockKey;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The command line, run in-process: {@link #run} parses, acts and returns the exit code; it never
 * calls {@code System.exit}. Not thread-safe; one run per instance of {@link Io}.
 */
final class Cli {

  /** A leader found, an eviction done, a watch stopped. */
  static final int OK = 0;

  /** The database failed: the message names the SQLState. */
  static final int DATABASE_ERROR = 1;

  /** Bad command-line input. */
  static final int USAGE = 2;

  /** Nobody holds the key (who), or there is nobody to evict. */
  static final int NO_LEADER = 3;

  /** Evict not confirmed: the answer was not yes, or there is no terminal and no --yes. */
  static final int NOT_CONFIRMED = 4;

  /** The holder changed between the read and the eviction: nothing was terminated. */
  static final int HOLDER_CHANGED = 5;

  /** How long evict waits for the terminated session to end (PostgreSQL 14+). */
  static final long TERMINATE_WAIT_MILLIS = 5_000;

  static final String APPLICATION_NAME = "retsu-lock-cli";

  private static final String HIDDEN = "(hidden: needs pg_read_all_stats or the holder's role)";

  /**
   * What a run talks to.
   *
   * @param out results
   * @param err errors and prompts
   * @param env the environment ({@code PGUSER}, {@code PGPASSWORD})
   * @param terminal where a confirmation comes from
   * @param stop counted down to end a {@code --watch}
   */
  record Io(
      PrintStream out,
      PrintStream err,
      Map<String, String> env,
      Terminal terminal,
      CountDownLatch stop) {}

  private final Io io;

  private Cli(Io io) {
    this.io = io;
  }

  /**
   * Runs one command line.
   *
   * @param args the arguments
   * @param io what it talks to
   * @return the exit code
   */
  static int run(String[] args, Io io) {
    return new Cli(io).run(args);
  }

  private int run(String[] args) {
    if (Options.wantsHelp(args)) {
      io.out().print(Usage.TEXT);
      io.out().flush();
      return OK;
    }
    Options o;
    try {
      o = Options.parse(args);
    } catch (UsageException e) {
      io.err().println("retsu-lock-cli: " + e.getMessage());
      io.err().println("Run with --help for usage.");
      io.err().flush();
      return USAGE;
    }
    PGSimpleDataSource ds = dataSource(o);
    try {
      if (o.command().equals("evict")) {
        return evict(ds, o);
      }
      return o.watch() ? watch(ds, o) : who(ds, o);
    } catch (AdvisoryLockException | SQLException e) {
      return databaseError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      io.err().println("retsu-lock-cli: interrupted");
      return DATABASE_ERROR;
    } finally {
      io.out().flush();
      io.err().flush();
    }
  }

  private PGSimpleDataSource dataSource(Options o) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(o.url());
    if (o.user() != null) {
      ds.setUser(o.user());
    } else if (ds.getUser() == null && io.env().get("PGUSER") != null) {
      ds.setUser(io.env().get("PGUSER"));
    }
    if (o.password() != null) {
      ds.setPassword(o.password());
    } else if (ds.getPassword() == null && io.env().get("PGPASSWORD") != null) {
      ds.setPassword(io.env().get("PGPASSWORD"));
    }
    ds.setApplicationName(APPLICATION_NAME);
    ds.setConnectTimeout(10);
    return ds;
  }

  private int databaseError(Exception e) {
    SQLException sql = null;
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s) {
        sql = s;
        break;
      }
    }
    String state = sql == null ? "none" : String.valueOf(sql.getSQLState());
    String message = sql == null ? e.getMessage() : sql.getMessage();
    io.err().println("retsu-lock-cli: database error (SQLState " + state + "): " + message);
    return DATABASE_ERROR;
  }

  // --- who -------------------------------------------------------------------------------------

  private int who(PGSimpleDataSource ds, Options o) throws SQLException {
    if (o.group() != null) {
      return group(ds, o);
    }
    LockKey key = o.keys().get(0);
    String label = o.labels().get(0);
    Optional<LeaderInfo> leader = Optional.empty();
    Optional<Activity> activity = Optional.empty();
    // the holder may end between the two reads: then read again, at most three times
    for (int attempt = 0; attempt < 3; attempt++) {
      leader = read(ds, key, o);
      if (leader.isEmpty()) {
        break;
      }
      try (Connection c = ds.getConnection()) {
        activity = Activity.read(c, leader.get().pid());
      }
      if (activity.isPresent()) {
        break;
      }
    }
    // who queues behind the holder, read after it: a queued session is what the key goes to next
    List<Waiter> waiters;
    try (Connection c = ds.getConnection()) {
      waiters = Waiter.read(c, key, o.candidateRole());
    }
    boolean foreignQueued = waiters.stream().anyMatch(Waiter::foreign);
    if (o.json()) {
      io.out()
          .println(
              new Json()
                  .obj("key", keyJson(key, label))
                  .obj("leader", leader.map(Cli::leaderJson).orElse(null))
                  .obj("session", activity.map(Activity::json).orElse(null))
                  .arr("waiters", waiters.stream().map(Waiter::json).toList())
                  .bool("foreignQueued", foreignQueued));
    } else {
      if (leader.isEmpty()) {
        io.out().println("key          " + keyText(key, label));
        io.out().println("leader       nobody holds the key");
      } else {
        printLeader(key, label, leader.get(), activity, o);
      }
      printWaiters(waiters, o);
    }
    // queued sessions never change the exit code: it says whether the key is held
    return leader.isPresent() ? OK : NO_LEADER;
  }

  /**
   * The sessions queued on the key, in queue order, and a warning for each foreign one: the lock
   * manager grants it the key when its turn comes, whatever the candidates do.
   */
  private void printWaiters(List<Waiter> waiters, Options o) {
    PrintStream out = io.out();
    if (waiters.isEmpty()) {
      out.println("queued       nobody waits for the key");
      return;
    }
    out.println(
        "queued       "
            + waiters.size()
            + (waiters.size() == 1 ? " session waits" : " sessions wait")
            + " for the key, next to be granted first");
    for (Waiter w : waiters) {
      out.println(
          "  "
              + w.position()
              + ". pid "
              + w.pid()
              + "  "
              + w.who()
              + (w.mode().equals("ExclusiveLock") ? "" : "  mode " + w.mode())
              + "  waiting since "
              + w.waitingSince().map(Object::toString).orElse("-"));
    }
    for (Waiter w : waiters) {
      if (w.foreign()) {
        out.println(
            "warning      foreign session queued: pid "
                + w.pid()
                + " (role "
                + w.role().orElse("unknown")
                + ", not the candidates' role: "
                + candidates(o)
                + ") will be granted the key the moment the holder's session ends"
                + (w.position() == 1
                    ? ""
                    : " and the " + (w.position() - 1) + " queued ahead of it have had their turn")
                + "; no candidate can lead while it holds the key");
      }
    }
  }

  private static Optional<LeaderInfo> read(PGSimpleDataSource ds, LockKey key, Options o) {
    return o.candidateRole() == null
        ? LeaderInfo.of(ds, key)
        : LeaderInfo.of(ds, key, o.candidateRole());
  }

  /** The candidates' role as the CLI judges it, for people. */
  private static String candidates(Options o) {
    return o.candidateRole() == null
        ? "the CLI's own login role; --candidate-role names another"
        : o.candidateRole();
  }

  /** What a foreign holder is, with its role when its session is still there to read it. */
  private static String foreign(Optional<String> role, Options o) {
    return "none: a foreign session holds the key (role "
        + role.orElse("unknown")
        + ", not the candidates' role: "
        + candidates(o)
        + ")";
  }

  private void printLeader(
      LockKey key, String label, LeaderInfo l, Optional<Activity> activity, Options o) {
    PrintStream out = io.out();
    out.println("key          " + keyText(key, label));
    out.println(
        "leader       "
            + (l.foreign()
                ? foreign(activity.flatMap(Activity::user), o)
                : l.candidateId().isEmpty() ? "(not a retsu-lock candidate)" : l.candidateId()));
    out.println("pid          " + l.pid());
    out.println("database     " + l.database());
    out.println(
        "token        "
            + l.token()
                .map(Object::toString)
                .orElse(
                    l.foreign()
                        ? "- (a foreign session's name counts for nothing)"
                        : "- (the holder took none)"));
    out.println(
        "term         "
            + (l.term().isPresent()
                ? String.valueOf(l.term().getAsLong())
                : "- (numbered by the leader itself; the token orders terms)"));
    out.println(
        "since        "
            + l.acquiredAt()
                .map(Object::toString)
                .orElse(
                    activity
                        .flatMap(Activity::backendStart)
                        .map(
                            t -> "its session started " + t + " (PostgreSQL records no grant time)")
                        .orElse("- (PostgreSQL records no grant time) " + HIDDEN)));
    out.println("last renewal " + l.lastRenewal().map(Object::toString).orElse("- " + HIDDEN));
    if (activity.isEmpty()) {
      out.println("session      ended while it was read");
      return;
    }
    Activity a = activity.get();
    out.println("session (pg_stat_activity)");
    out.println("  pid              " + a.pid());
    out.println("  application_name " + a.applicationName());
    out.println("  user             " + a.user().orElse("-"));
    boolean hidden = a.state().isEmpty();
    out.println(
        "  client_addr      "
            + a.clientAddress().orElse(hidden ? HIDDEN : "- (a Unix-domain socket)"));
    out.println("  state            " + a.state().orElse(HIDDEN));
    out.println("  state_change     " + a.stateChange().map(Object::toString).orElse(HIDDEN));
    out.println("  backend_start    " + a.backendStart().map(Object::toString).orElse(HIDDEN));
  }

  private int group(PGSimpleDataSource ds, Options o) throws SQLException {
    Map<LockKey, LeaderInfo> leaders =
        o.candidateRole() == null
            ? LeaderInfo.of(ds, o.keys())
            : LeaderInfo.of(ds, o.keys(), o.candidateRole());
    Map<String, Integer> owners = new TreeMap<>();
    Map<Integer, Optional<String>> foreignRoles = new TreeMap<>();
    for (LeaderInfo l : leaders.values()) {
      if (l.foreign()) {
        foreignRoles.put(l.pid(), Optional.empty());
      } else {
        owners.merge(l.candidateId(), 1, Integer::sum);
      }
    }
    if (!foreignRoles.isEmpty()) {
      try (Connection c = ds.getConnection()) {
        for (Integer pid : List.copyOf(foreignRoles.keySet())) {
          foreignRoles.put(pid, Activity.read(c, pid).flatMap(Activity::user));
        }
      }
    }
    long foreignKeys = leaders.values().stream().filter(LeaderInfo::foreign).count();
    int n = o.keys().size();
    // the sessions queued on each key, read after the holders, one statement per key
    List<List<Waiter>> queues = new ArrayList<>(n);
    try (Connection c = ds.getConnection()) {
      for (LockKey k : o.keys()) {
        queues.add(Waiter.read(c, k, o.candidateRole()));
      }
    }
    boolean foreignQueued = queues.stream().flatMap(List::stream).anyMatch(Waiter::foreign);
    if (o.json()) {
      List<Json> rows = new ArrayList<>();
      for (int p = 0; p < n; p++) {
        LockKey k = o.keys().get(p);
        rows.add(
            new Json()
                .num("partition", p)
                .obj("key", keyJson(k, o.labels().get(p)))
                .obj(
                    "leader",
                    Optional.ofNullable(leaders.get(k))
                        .map(
                            l ->
                                l.foreign()
                                    ? leaderJson(l)
                                        .str("role", foreignRoles.get(l.pid()).orElse(null))
                                    : leaderJson(l))
                        .orElse(null))
                .arr("waiters", queues.get(p).stream().map(Waiter::json).toList()));
      }
      Json ownerJson = new Json();
      owners.forEach(ownerJson::num);
      io.out()
          .println(
              new Json()
                  .str("group", o.group())
                  .num("partitions", n)
                  .num("held", leaders.size())
                  .obj("owners", ownerJson)
                  .arr("keys", rows)
                  .bool("foreignQueued", foreignQueued));
    } else {
      PrintStream out = io.out();
      out.printf(
          "group %s: %d keys, %d held by %d candidates%s%n",
          o.group(),
          n,
          leaders.size() - foreignKeys,
          owners.size(),
          foreignKeys == 0
              ? ""
              : ", " + foreignKeys + " held by foreign sessions (not of the candidates' role)");
      out.printf("%-9s  %-20s  %-8s  %-12s  %s%n", "partition", "key", "pid", "token", "leader");
      for (int p = 0; p < n; p++) {
        LockKey k = o.keys().get(p);
        LeaderInfo l = leaders.get(k);
        out.printf(
            "%-9d  %-20d  %-8s  %-12s  %s%n",
            p,
            k.value(),
            l == null ? "-" : String.valueOf(l.pid()),
            l == null ? "-" : l.token().map(Object::toString).orElse("-"),
            l == null
                ? "nobody"
                : l.foreign()
                    ? "foreign session (role " + foreignRoles.get(l.pid()).orElse("unknown") + ")"
                    : l.candidateId());
      }
      if (!owners.isEmpty()) {
        out.println("owners");
        owners.forEach((c, count) -> out.printf("  %-40s %d%n", c, count));
      }
      for (int p = 0; p < n; p++) {
        if (!queues.get(p).isEmpty()) {
          out.println("partition " + p + ":");
          printWaiters(queues.get(p), o);
        }
      }
    }
    return leaders.isEmpty() ? NO_LEADER : OK;
  }

  // --- watch -----------------------------------------------------------------------------------

  private int watch(PGSimpleDataSource ds, Options o) throws InterruptedException {
    BlockingQueue<LeaderChange> changes = new LinkedBlockingQueue<>();
    Map<LockKey, Integer> partition = new HashMap<>();
    for (int p = 0; p < o.keys().size(); p++) {
      partition.put(o.keys().get(p), p);
    }
    LeaderWatch.Builder b = LeaderWatch.builder(ds).name("cli");
    if (o.candidateRole() != null) {
      b.candidateRole(o.candidateRole());
    }
    try (LeaderWatch watch = b.open()) {
      for (LockKey k : o.keys()) {
        // the listener only queues: it runs on the watch's thread, which every key shares
        watch.watch(k, changes::add);
      }
      boolean connected = true;
      while (io.stop().getCount() > 0) {
        LeaderChange c = changes.poll(100, TimeUnit.MILLISECONDS);
        if (c != null) {
          int p = partition.get(c.key());
          printChange(o, c, o.group() == null ? -1 : p, o.labels().get(p));
        }
        boolean now = watch.isConnected();
        if (now != connected) {
          connected = now;
          printConnection(o, now);
        }
      }
    }
    return OK;
  }

  private void printChange(Options o, LeaderChange c, int partition, String label) {
    if (o.json()) {
      Json j = new Json().time("seenAt", Optional.of(c.seenAt())).str("cause", c.cause().name());
      if (partition >= 0) {
        j.num("partition", partition);
      }
      j.obj("key", keyJson(c.key(), label))
          .obj("leader", c.leader().map(Cli::leaderJson).orElse(null));
      io.out().println(j);
    } else {
      String who =
          c.leader()
              .map(
                  l ->
                      "leader="
                          + (l.foreign()
                              ? "none(foreign-session)"
                              : l.candidateId().isEmpty() ? "-" : l.candidateId())
                          + " pid="
                          + l.pid()
                          + " token="
                          + l.token().map(Object::toString).orElse("-"))
              .orElse("nobody leads");
      io.out().println(c.seenAt() + " " + c.cause() + " " + keyText(c.key(), label) + " " + who);
    }
    io.out().flush();
  }

  private void printConnection(Options o, boolean connected) {
    if (o.json()) {
      io.out().println(new Json().str("watch", connected ? "connected" : "disconnected"));
    } else {
      io.out()
          .println(
              connected
                  ? "watch connected again: each key is read afresh (READ)"
                  : "watch disconnected: changes are not seen until it reconnects");
    }
    io.out().flush();
  }

  // --- evict -----------------------------------------------------------------------------------

  private int evict(PGSimpleDataSource ds, Options o) throws SQLException {
    LockKey key = o.keys().get(0);
    String label = o.labels().get(0);
    Optional<LeaderInfo> leader = LeaderInfo.of(ds, key);
    if (leader.isEmpty()) {
      report(o, key, label, "none", null, null, "nobody holds the key; nothing to evict");
      return NO_LEADER;
    }
    LeaderInfo l = leader.get();
    Optional<Activity> activity;
    try (Connection c = ds.getConnection()) {
      activity = Activity.read(c, l.pid());
    }
    if (activity.isEmpty()) {
      report(
          o,
          key,
          label,
          "changed",
          l,
          null,
          "the holder's session ended meanwhile; nothing terminated");
      return HOLDER_CHANGED;
    }
    Activity a = activity.get();
    String who =
        "pid "
            + l.pid()
            + " (candidate "
            + (l.candidateId().isEmpty() ? "-" : l.candidateId())
            + ", token "
            + l.token().map(Object::toString).orElse("-")
            + ", application_name "
            + a.applicationName()
            + ")";
    if (!o.yes()) {
      if (!io.terminal().interactive()) {
        io.err()
            .println(
                "retsu-lock-cli: refusing to evict "
                    + who
                    + " without a confirmation: no terminal to ask on; pass --yes to evict"
                    + " without asking");
        return NOT_CONFIRMED;
      }
      String answer =
          io.terminal()
              .readLine(
                  "Terminate the session of "
                      + who
                      + ", which holds "
                      + keyText(key, label)
                      + "? Type yes to confirm: ");
      if (answer == null || !answer.trim().equals("yes")) {
        io.err().println("retsu-lock-cli: not confirmed; nothing terminated");
        return NOT_CONFIRMED;
      }
    }
    // Terminate only the session read above, still in the same term: same pid, same start, same
    // application_name (a retsu-lock leader's names its token), so a new holder is never hit; and
    // only while that backend still holds this key, read from pg_locks in the same statement, since
    // a session can let go of the key and keep its pid, start and name (a group member yields one
    // key and keeps the others on the same session).
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(TERMINATE_HOLDER)) {
      ps.setLong(1, TERMINATE_WAIT_MILLIS);
      ps.setInt(2, l.pid());
      ps.setString(3, a.applicationName());
      ps.setObject(
          4,
          a.backendStart().map(t -> t.atOffset(java.time.ZoneOffset.UTC)).orElse(null),
          java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
      bindKey(ps, 5, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          report(
              o,
              key,
              label,
              "changed",
              l,
              a,
              "the holder changed before the eviction; nothing terminated");
          return HOLDER_CHANGED;
        }
        if (!rs.getBoolean(1)) {
          SQLWarning w = ps.getWarnings();
          throw new SQLException(
              "pid "
                  + l.pid()
                  + " was signalled but had not ended after "
                  + TERMINATE_WAIT_MILLIS
                  + " ms"
                  + (w == null ? "" : ": " + w.getMessage()),
              w == null ? "57014" : w.getSQLState());
        }
      }
    }
    report(o, key, label, "evicted", l, a, "terminated the session of " + who);
    return OK;
  }

  /**
   * Terminates a session if it is still the one read and still holds the key: binds the wait
   * (millis), pid, application_name, backend_start, then {@link #bindKey}'s three values. No row:
   * the holder changed. The key as {@code pg_locks} shows it: {@code objsubid} 1 with the high and
   * low 32 bits of a {@code bigint} key, 2 with the two parts of a two-part key.
   */
  private static final String TERMINATE_HOLDER =
      "SELECT pg_catalog.pg_terminate_backend(a.pid, ?) FROM pg_catalog.pg_stat_activity a"
          + " WHERE a.pid = ? AND a.application_name = ?"
          + " AND a.backend_start IS NOT DISTINCT FROM ?"
          + " AND EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.pid = a.pid"
          + " AND l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock'"
          + " AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d"
          + " WHERE d.datname = pg_catalog.current_database())"
          + " AND l.objsubid = ? AND l.classid = ?::int8::oid AND l.objid = ?::int8::oid)";

  /** Binds the key's objsubid, classid, objid from {@code index}, as pg_locks shows them. */
  private static void bindKey(PreparedStatement ps, int index, LockKey key) throws SQLException {
    if (key.isTwoPart()) {
      ps.setInt(index, 2);
      ps.setLong(index + 1, Integer.toUnsignedLong(key.first()));
      ps.setLong(index + 2, Integer.toUnsignedLong(key.second()));
    } else {
      ps.setInt(index, 1);
      ps.setLong(index + 1, key.value() >>> 32);
      ps.setLong(index + 2, key.value() & 0xffffffffL);
    }
  }

  private void report(
      Options o, LockKey key, String label, String result, LeaderInfo l, Activity a, String text) {
    if (o.json()) {
      io.out()
          .println(
              new Json()
                  .str("result", result)
                  .obj("key", keyJson(key, label))
                  .obj("leader", l == null ? null : leaderJson(l))
                  .obj("session", a == null ? null : a.json()));
    } else {
      io.out().println(text);
    }
  }

  // --- shared ----------------------------------------------------------------------------------

  static String keyText(LockKey key, String label) {
    String hex = String.format("0x%016x (%d)", key.value(), key.value());
    return label == null ? hex : label + " " + hex;
  }

  static Json keyJson(LockKey key, String label) {
    return new Json()
        .str("bigint", String.valueOf(key.value()))
        .str("hex", String.format("0x%016x", key.value()))
        .str("name", label);
  }

  static Json leaderJson(LeaderInfo l) {
    return new Json()
        .str("candidate", l.candidateId().isEmpty() ? null : l.candidateId())
        .num("pid", l.pid())
        .str("database", l.database())
        .str("token", l.token())
        .num("term", l.term())
        .time("acquiredAt", l.acquiredAt())
        .time("lastRenewal", l.lastRenewal())
        .bool("foreign", l.foreign());
  }
}
