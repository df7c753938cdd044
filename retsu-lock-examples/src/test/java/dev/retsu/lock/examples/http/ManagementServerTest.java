package dev.retsu.lock.examples.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ManagementServerTest {

  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final AtomicBoolean ready = new AtomicBoolean(true);
  private ManagementServer server;

  @BeforeEach
  void start() throws IOException {
    Counter.builder("examples.test").register(registry).increment();
    server =
        ManagementServer.start(
            "127.0.0.1", 0, registry, () -> "{\"role\":\"standby\"}", ready::get);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private HttpURLConnection open(String method, String path) throws IOException {
    HttpURLConnection c =
        (HttpURLConnection)
            URI.create("http://127.0.0.1:" + server.port() + path).toURL().openConnection();
    c.setRequestMethod(method);
    c.setConnectTimeout(2000);
    c.setReadTimeout(5000);
    return c;
  }

  private int status(String method, String path) throws IOException {
    HttpURLConnection c = open(method, path);
    try {
      return c.getResponseCode();
    } finally {
      c.disconnect();
    }
  }

  @Test
  void servesPrometheusTextAndJson() throws IOException {
    HttpURLConnection metrics = open("GET", "/metrics");
    assertThat(metrics.getResponseCode()).isEqualTo(200);
    assertThat(metrics.getContentType()).isEqualTo("text/plain; version=0.0.4; charset=utf-8");
    assertThat(new String(metrics.getInputStream().readAllBytes()))
        .contains("examples_test_total 1.0");
    metrics.disconnect();

    HttpURLConnection leader = open("GET", "/leader");
    assertThat(leader.getContentType()).isEqualTo("application/json");
    assertThat(new String(leader.getInputStream().readAllBytes()))
        .isEqualTo("{\"role\":\"standby\"}");
    leader.disconnect();
  }

  @Test
  void readinessFollowsTheLoopAndLivenessDoesNot() throws IOException {
    assertThat(status("GET", "/health/ready")).isEqualTo(200);
    ready.set(false);
    assertThat(status("GET", "/health/ready")).isEqualTo(503);
    assertThat(status("GET", "/health/live")).isEqualTo(200);
  }

  @Test
  void unknownPathsAndMethodsAreRefused() throws IOException {
    assertThat(status("GET", "/metricsfoo")).isEqualTo(404);
    assertThat(status("GET", "/metrics/x")).isEqualTo(404);
    assertThat(status("GET", "/")).isEqualTo(404);
    assertThat(status("POST", "/leader")).isEqualTo(405);
  }

  @Test
  void closeIsIdempotentAndFreesThePort() throws IOException {
    int port = server.port();
    server.close();
    server.close();
    try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      assertThat(again.getLocalPort()).isEqualTo(port);
    }
  }
}
