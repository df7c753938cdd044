package dev.retsu.lock.spring.boot;

import dev.retsu.lock.LeaderInfo;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.lang.Nullable;

/**
 * Actuator endpoint {@code leaders}: each leader's state as the health indicator shows it, with the
 * holder shaped like a lease (this instance's own term, or what the context's watch last delivered
 * when {@code retsu.lock.watch.enabled=true}); without a watch, a standby's holder comes from one
 * short {@code pg_locks} query per leader per request on a connection borrowed from the lock's
 * DataSource, which is fine for an on-demand endpoint and the reason it is not in the health check.
 * A holder whose session is outside the candidates' role shows {@code "foreign": true} and {@code
 * "self": false}, with no candidate and no token, whatever its session's name claims.
 *
 * <p>One write operation, {@code POST /actuator/leaders/{name}}, without a body or with a JSON body
 * {@code {"cooldown": "30s"}} (a group also needs {@code "key"}): the leader yields ({@link
 * RetsuLeader#yield(Duration)}). It answers 200 when this instance led and handed over (the body
 * says how many candidate sessions were waiting on the key, and what happens next: with POLL
 * standbys nobody waits, and the key stays free until a standby's next attempt), 409 when it does
 * not lead here (the body names the holder as far as it is known), 404 for an unknown name, 400 for
 * a bad cooldown or key. A leader's 200 and 409 also say how this instance contends ({@code
 * takeover}). Write operations are off by default ({@code defaultAccess = READ_ONLY}): {@code
 * management.endpoint.leaders.access=unrestricted} turns it on, and it should then be secured like
 * any write operation.
 */
@Endpoint(id = "leaders", defaultAccess = Access.READ_ONLY)
public class LeadersEndpoint {

  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(LeadersEndpoint.class);

  /** The cooldown of a yield that names none: 30 seconds. */
  public static final Duration DEFAULT_YIELD_COOLDOWN = Duration.ofSeconds(30);

  private final RetsuLeaders leaders;

  /**
   * Creates the endpoint.
   *
   * @param leaders the leaders it lists
   */
  public LeadersEndpoint(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  /**
   * Lists every leader.
   *
   * @return leader name to its state and the lock's holder; group name to its state
   */
  @ReadOperation
  public Map<String, Object> leaders() {
    Map<String, Object> all = new LinkedHashMap<>();
    for (RetsuLeader l : leaders.all().values()) {
      all.put(l.name(), describe(l));
    }
    Map<String, Object> groups = new LinkedHashMap<>();
    for (RetsuLeaderGroup g : leaders.groups().values()) {
      groups.put(g.name(), g.details());
    }
    return groups.isEmpty() ? Map.of("leaders", all) : Map.of("leaders", all, "groups", groups);
  }

  /**
   * Shows one leader.
   *
   * @param name the leader's name
   * @return its state and the lock's holder, or null (404) when there is no such leader
   */
  @ReadOperation
  public Map<String, Object> leader(@Selector String name) {
    return leaders.find(name).map(LeadersEndpoint::describe).orElse(null);
  }

  /**
   * {@code POST /actuator/leaders/{name}} without a body (no {@code Content-Type} needed): {@link
   * #yield(String, String, String)} with the default cooldown. A POST with a JSON body goes to that
   * operation instead.
   *
   * @param name the leader's name
   * @return as {@link #yield(String, String, String)}
   */
  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> yieldWithoutBody(@Selector String name) {
    return this.yield(name, null, null);
  }

  /**
   * Makes this instance's leader (or group member, for one key) hand over, if it leads here.
   *
   * @param name the leader's or group's name
   * @param cooldown how long not to contend again: {@code 30s}, {@code 500ms}, {@code 2m} or
   *     ISO-8601 ({@code PT30S}); none: {@link #DEFAULT_YIELD_COOLDOWN}
   * @param key for a group, the key's name (or partition number)
   * @return 200 with {@code yielded: true}; 409 when not leading here; 404; 400
   */
  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> yield(
      @Selector String name, @Nullable String cooldown, @Nullable String key) {
    Duration wait;
    try {
      wait = cooldown == null || cooldown.isBlank() ? DEFAULT_YIELD_COOLDOWN : duration(cooldown);
    } catch (IllegalArgumentException e) {
      return response(400, name, key, e.getMessage());
    }
    Optional<RetsuLeader> leader = leaders.find(name);
    RetsuLeaderGroup group = leaders.groups().get(name);
    if (leader.isEmpty() && group == null) {
      return response(
          404,
          name,
          key,
          "no leader or group named '"
              + name
              + "'; leaders: "
              + leaders.all().keySet()
              + ", groups: "
              + leaders.groups().keySet());
    }
    try {
      if (leader.isPresent()) {
        RetsuLeader l = leader.get();
        if (key != null) {
          return response(400, name, key, "key is for a group, but '" + name + "' is a leader");
        }
        Waiting waiting = l.isLeader() ? waitingSessions(l) : null;
        if (!l.yield(wait)) {
          return notLeading(l);
        }
        Map<String, Object> body = body(name, null, true);
        body.put("cooldown", wait.toString());
        body.put("takeover", l.takeover().name());
        body.put("waitingCandidates", waiting == null ? null : waiting.candidates());
        String next = next(l, waiting, wait);
        body.put("next", next);
        LOG.info("[leader={}] Yielded through the leaders endpoint: {}", name, next);
        return new WebEndpointResponse<>(body, 200);
      } else {
        if (key == null) {
          return response(
              400, name, null, "key is required for group '" + name + "': which key to hand over");
        }
        if (!group.yield(key, wait)) {
          return response(
              409,
              name,
              key,
              "this member ("
                  + group.group().candidateId()
                  + ") does not hold key '"
                  + key
                  + "' of group '"
                  + name
                  + "'; only its holder can yield it");
        }
      }
    } catch (IllegalArgumentException e) {
      return response(400, name, key, e.getMessage());
    } catch (IllegalStateException e) {
      return response(409, name, key, e.getMessage());
    }
    Map<String, Object> body = body(name, key, true);
    body.put("cooldown", wait.toString());
    return new WebEndpointResponse<>(body, 200);
  }

  private WebEndpointResponse<Map<String, Object>> notLeading(RetsuLeader l) {
    Map<String, Object> body = body(l.name(), null, false);
    body.put(
        "error",
        "this instance ("
            + l.candidateId()
            + ") does not lead '"
            + l.name()
            + "'; only the leader can yield");
    body.put("takeover", l.takeover().name());
    Map<String, Object> described = describe(l);
    body.put("holder", described.get("holder"));
    if (described.containsKey("holderError")) {
      body.put("holderError", described.get("holderError"));
    }
    return new WebEndpointResponse<>(body, 409);
  }

  /**
   * What happens to the key after this yield, for the operator: a waiting standby is granted it at
   * once; without one (POLL standbys wait between attempts and hold nothing) the key stays free
   * until a standby's next attempt, and this instance may take it back after its cooldown.
   */
  private static String next(RetsuLeader l, Waiting waiting, Duration cooldown) {
    String others =
        waiting == null || waiting.others() == 0
            ? ""
            : "; "
                + waiting.others()
                + (waiting.others() == 1 ? " session" : " sessions")
                + " of another role also waited on the key, and the server grants it in queue"
                + " order";
    if (waiting != null && waiting.candidates() > 0) {
      return waiting.candidates()
          + (waiting.candidates() == 1 ? " candidate session was" : " candidate sessions were")
          + " waiting on the key (WAIT standbys): the first is granted it at once"
          + others;
    }
    String seen =
        waiting == null
            ? "whether a candidate was waiting on the key could not be read"
            : "no candidate was waiting on the key" + others;
    String text =
        seen
            + ": it stays free until a POLL standby's next attempt (each standby tries every"
            + " retry-interval, here "
            + l.retryInterval()
            + "), and this instance contends again after its cooldown of "
            + cooldown;
    if (cooldown.compareTo(l.retryInterval()) < 0) {
      text +=
          ", shorter than the retry-interval: this instance may take the key back before a"
              + " standby tries";
    }
    return text;
  }

  /**
   * The sessions queued on the leader's key, from {@code pg_locks} on a connection borrowed from
   * the locks' DataSource: how many are candidates and how many are not; null when it cannot be
   * read. A candidate is a session of the candidates' role, the role the server says it logged in
   * as ({@code usesysid}), as core decides it (DESIGN invariant 9): any role that can connect can
   * queue on the key and name itself like a candidate. Core's own read of a key's queue lives in a
   * package this module cannot reach on the module path, hence the statement here.
   */
  private Waiting waitingSessions(RetsuLeader l) {
    javax.sql.DataSource ds = leaders.lockDataSource();
    if (ds == null) {
      return null;
    }
    dev.retsu.lock.LockKey k = l.key();
    String sql =
        "SELECT count(*) FILTER (WHERE c.candidate)::int4, count(*) FILTER (WHERE NOT"
            + " c.candidate)::int4 FROM pg_catalog.pg_locks l LEFT JOIN LATERAL (SELECT"
            + " coalesce(a.usesysid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname ="
            + " SESSION_USER), false) AS candidate FROM pg_catalog.pg_stat_activity a WHERE a.pid ="
            + " l.pid) s ON true CROSS JOIN LATERAL (SELECT coalesce(s.candidate, false) AS"
            + " candidate) c WHERE l.locktype = 'advisory' AND NOT l.granted AND l.database ="
            + " (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname ="
            + " pg_catalog.current_database()) AND l.objsubid = ? AND l.classid = ?::int8::oid AND"
            + " l.objid = ?::int8::oid";
    try (java.sql.Connection c = ds.getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setInt(1, k.isTwoPart() ? 2 : 1);
      ps.setLong(2, Integer.toUnsignedLong(k.isTwoPart() ? k.first() : (int) (k.value() >>> 32)));
      ps.setLong(3, Integer.toUnsignedLong(k.isTwoPart() ? k.second() : (int) k.value()));
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new Waiting(rs.getInt(1), rs.getInt(2)) : null;
      }
    } catch (java.sql.SQLException | RuntimeException e) {
      LOG.debug("[leader={}] Could not count the sessions waiting on the key", l.name(), e);
      return null;
    }
  }

  /** The sessions queued on a key: of the candidates' role, and of any other role. */
  private record Waiting(int candidates, int others) {}

  private static Map<String, Object> body(String name, String key, boolean yielded) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("name", name);
    if (key != null) {
      body.put("key", key);
    }
    body.put("yielded", yielded);
    return body;
  }

  private static WebEndpointResponse<Map<String, Object>> response(
      int status, String name, String key, String error) {
    Map<String, Object> body = body(name, key, false);
    body.put("error", error);
    return new WebEndpointResponse<>(body, status);
  }

  /**
   * A cooldown: a whole number with {@code ms}, {@code s}, {@code m} or {@code h}, or ISO-8601;
   * zero or positive.
   */
  static Duration duration(String text) {
    String t = text.strip();
    Duration d;
    try {
      java.util.regex.Matcher m =
          java.util.regex.Pattern.compile("(\\d{1,9})(ms|s|m|h)").matcher(t);
      if (m.matches()) {
        long n = Long.parseLong(m.group(1));
        d =
            switch (m.group(2)) {
              case "ms" -> Duration.ofMillis(n);
              case "s" -> Duration.ofSeconds(n);
              case "m" -> Duration.ofMinutes(n);
              default -> Duration.ofHours(n);
            };
      } else {
        d = Duration.parse(t);
      }
    } catch (java.time.format.DateTimeParseException e) {
      d = null;
    }
    if (d == null || d.isNegative()) {
      throw new IllegalArgumentException(
          "cooldown must be zero or positive, like 30s, 500ms, 2m, 1h or PT30S, but was \""
              + (t.length() > 40 ? t.substring(0, 40) + "..." : t)
              + "\"");
    }
    return d;
  }

  private static Map<String, Object> describe(RetsuLeader l) {
    Map<String, Object> d = new LinkedHashMap<>(l.details());
    if (d.get("holder") != null) {
      return d; // lease-shaped, without I/O: own term or the watch
    }
    d.remove("holder");
    try {
      Optional<LeaderInfo> holder = l.currentHolder();
      if (holder.isPresent()) {
        d.put("holder", RetsuLeader.holder(holder.get(), l.candidateId(), "pg_locks"));
      } else {
        d.put("holder", null);
      }
    } catch (RuntimeException e) {
      d.put("holderError", e.getMessage());
    }
    return d;
  }
}
