package dev.retsu.lock.examples.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's management endpoint: {@code /metrics} (Prometheus text), {@code /health/live},
 * {@code /health/ready} and {@code /leader} (JSON). Served by the JDK's HTTP server on two daemon
 * threads named {@code retsu-lock-examples-http-N}. {@link #close()} is idempotent.
 */
public final class ManagementServer implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ManagementServer.class);
  private static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

  private final HttpServer server;
  private final ExecutorService executor;
  private volatile boolean closed;

  private ManagementServer(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /**
   * Binds and starts the endpoint.
   *
   * @param address the address to bind, e.g. {@code 0.0.0.0}
   * @param port the port; 0 for any free one
   * @param registry what {@code /metrics} serves
   * @param leaderJson the body of {@code /leader}
   * @param ready whether {@code /health/ready} says 200 (else 503)
   * @return the running endpoint
   * @throws IOException when the port cannot be bound (e.g. in use)
   */
  public static ManagementServer start(
      String address,
      int port,
      PrometheusMeterRegistry registry,
      Supplier<String> leaderJson,
      BooleanSupplier ready)
      throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(address, port), 50);
    AtomicInteger threads = new AtomicInteger();
    ExecutorService executor =
        Executors.newFixedThreadPool(
            2,
            r -> {
              Thread t = new Thread(r, "retsu-lock-examples-http-" + threads.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    server.setExecutor(executor);
    ManagementServer out = new ManagementServer(server, executor);
    server.createContext("/metrics", ex -> out.respond(ex, 200, PROMETHEUS_TEXT, registry::scrape));
    server.createContext(
        "/health/live",
        ex -> out.respond(ex, 200, "application/json", () -> "{\"status\":\"UP\"}"));
    server.createContext(
        "/health/ready",
        ex -> {
          boolean ok = ready.getAsBoolean() && !out.closed;
          out.respond(
              ex,
              ok ? 200 : 503,
              "application/json",
              () -> ok ? "{\"status\":\"UP\"}" : "{\"status\":\"DOWN\"}");
        });
    server.createContext("/leader", ex -> out.respond(ex, 200, "application/json", leaderJson));
    server.createContext(
        "/",
        ex ->
            out.respond(
                ex,
                404,
                "text/plain",
                () -> "try /metrics, /health/live, /health/ready, /leader\n"));
    server.start();
    LOG.info(
        "Management endpoint on http://{}:{}/ (/metrics, /health/live, /health/ready, /leader)",
        address,
        server.getAddress().getPort());
    return out;
  }

  /**
   * Returns the bound port.
   *
   * @return the port
   */
  public int port() {
    return server.getAddress().getPort();
  }

  /**
   * GETs a path from a management endpoint on this host, as the demo and the tests read it.
   *
   * @param port the endpoint's port
   * @param path e.g. {@code /leader}
   * @return the body on status 200; null on any other status or when nothing answers
   */
  public static String fetch(int port, String path) {
    try {
      HttpURLConnection c =
          (HttpURLConnection)
              URI.create("http://127.0.0.1:" + port + path).toURL().openConnection();
      c.setConnectTimeout(2000);
      c.setReadTimeout(5000);
      try {
        if (c.getResponseCode() != 200) {
          return null;
        }
        return new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } finally {
        c.disconnect();
      }
    } catch (IOException e) {
      return null;
    }
  }

  private void respond(HttpExchange ex, int status, String type, Supplier<String> body)
      throws IOException {
    try (ex) {
      String context = ex.getHttpContext().getPath();
      if (!context.equals("/") && !ex.getRequestURI().getPath().equals(context)) {
        ex.sendResponseHeaders(404, -1); // contexts match by prefix: /metricsfoo is not /metrics
        return;
      }
      if (!"GET".equals(ex.getRequestMethod()) && !"HEAD".equals(ex.getRequestMethod())) {
        ex.sendResponseHeaders(405, -1);
        return;
      }
      byte[] bytes;
      int code = status;
      try {
        bytes = body.get().getBytes(StandardCharsets.UTF_8);
      } catch (RuntimeException e) {
        LOG.warn("{} failed", ex.getRequestURI(), e);
        bytes = ("{\"error\":" + Json.string(e.toString()) + "}").getBytes(StandardCharsets.UTF_8);
        code = 500;
      }
      ex.getResponseHeaders().set("Content-Type", type);
      if ("HEAD".equals(ex.getRequestMethod())) {
        ex.sendResponseHeaders(code, -1);
        return;
      }
      ex.sendResponseHeaders(code, bytes.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  /** Stops accepting requests and ends the server threads. Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    server.stop(0);
    executor.shutdown();
    try {
      if (!executor.awaitTermination(2, TimeUnit.SECONDS)) {
        LOG.warn("Management endpoint threads did not stop within 2 s");
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    LOG.info("Management endpoint stopped");
  }
}
