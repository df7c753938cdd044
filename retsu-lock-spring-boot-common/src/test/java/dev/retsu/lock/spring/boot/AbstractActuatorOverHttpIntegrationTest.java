package dev.retsu.lock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retsu.lock.spring.boot.testapp.http.ActuatorApplication;
import dev.retsu.lock.testing.ChildJvm;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The starter's Actuator parts over real HTTP, in-process on each Spring Boot line's embedded
 * server: {@code POST /actuator/leaders/{name}} without a body (what {@code curl -X POST} sends)
 * yields, and with the database down the probes configured as the Spring Boot page shows answer 200
 * while {@code /actuator/health}, which includes Boot's own {@code db} indicator, answers 503.
 */
@ExtendWith(PostgresExtension.class)
public abstract class AbstractActuatorOverHttpIntegrationTest {

  private static final AtomicLong KEYS = new AtomicLong(9_600_000);

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /** The line under test. */
  protected final TestedBootLine line;

  /**
   * Creates the test for one line.
   *
   * @param line the line
   */
  protected AbstractActuatorOverHttpIntegrationTest(TestedBootLine line) {
    this.line = line;
  }

  private static ConfigurableApplicationContext start(
      String url, String user, String password, String... more) {
    List<String> properties =
        new ArrayList<>(
            List.of(
                "server.port=0",
                "server.address=127.0.0.1",
                "spring.main.banner-mode=off",
                "spring.datasource.url=" + url,
                "spring.datasource.username=" + user,
                "spring.datasource.password=" + password,
                "spring.datasource.hikari.maximum-pool-size=3",
                "spring.datasource.hikari.connection-timeout=1000",
                "management.endpoints.web.exposure.include=health,leaders",
                "management.endpoint.leaders.access=unrestricted",
                "management.endpoint.health.show-details=always",
                "retsu.lock.leaders.job.retry-interval=300ms",
                "retsu.lock.leaders.job.refresh-interval=300ms"));
    properties.addAll(List.of(more));
    return new SpringApplicationBuilder(ActuatorApplication.class)
        .properties(properties.toArray(String[]::new))
        .run();
  }

  @Test
  void aPostWithoutABodyYields(TestDatabase db) throws Exception {
    long key = KEYS.incrementAndGet() + 1000L * line.major();
    try (ConfigurableApplicationContext app =
        start(db.jdbcUrl(), db.user(), db.password(), "retsu.lock.leaders.job.key.value=" + key)) {
      RetsuLeader leader = app.getBean(RetsuLeaders.class).get("job");
      await().atMost(Duration.ofSeconds(15)).until(leader::isLeader);
      HttpResponse<String> yielded =
          send(
              HttpRequest.newBuilder(uri(app, "/actuator/leaders/job"))
                  .POST(HttpRequest.BodyPublishers.noBody()));
      assertThat(yielded.statusCode()).as(yielded.body()).isEqualTo(200);
      assertThat(yielded.body())
          .contains("\"yielded\":true", "\"cooldown\":\"PT30S\"", "\"takeover\":\"POLL\"");
      assertThat(leader.isLeader()).isFalse();
      // A JSON body still reaches the operation with parameters: it is not leading any more.
      HttpResponse<String> refused =
          send(
              HttpRequest.newBuilder(uri(app, "/actuator/leaders/job"))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString("{\"cooldown\":\"1s\"}")));
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);
      assertThat(refused.body()).contains("does not lead 'job'");
    }
  }

  @Test
  void withTheDatabaseDownTheProbesAnswerUpWhileTheWholeHealthIsDown() throws Exception {
    int port = ChildJvm.freePort();
    try (ConfigurableApplicationContext app =
        start(
            "jdbc:postgresql://127.0.0.1:" + port + "/postgres",
            "postgres",
            "",
            "management.endpoint.health.probes.enabled=true",
            "management.endpoint.health.group.readiness.include=readinessState,retsuLock",
            "management.endpoint.health.group.readiness.show-details=always")) {
      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () -> get(app, "/actuator/health/readiness").body().contains("database-unreachable"));
      HttpResponse<String> readiness = get(app, "/actuator/health/readiness");
      assertThat(readiness.statusCode()).as(readiness.body()).isEqualTo(200);
      assertThat(readiness.body())
          .contains("\"retsuLock\"", "\"role\":\"standby\"")
          .doesNotContain("\"db\"");
      HttpResponse<String> liveness = get(app, "/actuator/health/liveness");
      assertThat(liveness.statusCode()).as(liveness.body()).isEqualTo(200);
      HttpResponse<String> all = get(app, "/actuator/health");
      assertThat(all.statusCode()).as(all.body()).isEqualTo(503);
      // Boot 3 writes "status" first, Boot 4 "details" first.
      assertThat(all.body())
          .containsPattern("\"db\":\\{(\"details\":\\{[^}]*\\},)?\"status\":\"DOWN\"");
    }
  }

  private static URI uri(ConfigurableApplicationContext app, String path) {
    return URI.create(
        "http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port") + path);
  }

  private HttpResponse<String> get(ConfigurableApplicationContext app, String path)
      throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(uri(app, path)).GET());
  }

  private HttpResponse<String> send(HttpRequest.Builder request)
      throws IOException, InterruptedException {
    return http.send(
        request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
