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
 * <p>One write operation, {@code POST /actuator/leaders/{name}} with an optional JSON body {@code
 * {"cooldown": "30s"}} (a group also needs {@code "key"}): the leader yields ({@link
 * RetsuLeader#yield(Duration)}). It answers 200 when this instance led and handed over, 409 when it
 * does not lead here (the body names the holder as far as it is known), 404 for an unknown name,
 * 400 for a bad cooldown or key. Write operations are off by default ({@code defaultAccess =
 * READ_ONLY}): {@code management.endpoint.leaders.access=unrestricted} turns it on, and it should
 * then be secured like any write operation.
 */
@Endpoint(id = "leaders", defaultAccess = Access.READ_ONLY)
public class LeadersEndpoint {

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
        if (!l.yield(wait)) {
          Map<String, Object> body = body(name, null, false);
          body.put(
              "error",
              "this instance ("
                  + l.candidateId()
                  + ") does not lead '"
                  + name
                  + "'; only the leader can yield");
          body.put("holder", l.details().get("holder"));
          return new WebEndpointResponse<>(body, 409);
        }
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
