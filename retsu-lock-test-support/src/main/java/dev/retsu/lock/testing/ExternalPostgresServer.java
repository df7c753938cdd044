package dev.retsu.lock.testing;

import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A server given by a JDBC URL ({@code RETSU_TEST_JDBC_URL}). Tests create and drop databases on
 * it, so the user needs {@code CREATEDB}. It cannot be restarted by the tests.
 */
final class ExternalPostgresServer implements PostgresServer {

  private static final Pattern URL =
      Pattern.compile("^(jdbc:postgresql://[^/?]*/)([^?]*)(\\?.*)?$");

  private final String prefix;
  private final String query;
  private final String user;
  private final String password;

  ExternalPostgresServer(String url, String user, String password) {
    Objects.requireNonNull(url, "url");
    Matcher m = URL.matcher(url);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "RETSU_TEST_JDBC_URL must look like jdbc:postgresql://host:port/database[?options],"
              + " but was "
              + redact(url));
    }
    this.prefix = m.group(1);
    this.query = m.group(3) == null ? "" : m.group(3);
    this.user = user == null || user.isEmpty() ? "postgres" : user;
    this.password = password == null ? "" : password;
  }

  @Override
  public String jdbcUrl(String database) {
    return prefix + database + query;
  }

  @Override
  public String user() {
    return user;
  }

  @Override
  public String password() {
    return password;
  }

  @Override
  public String describe() {
    return "PostgreSQL from RETSU_TEST_JDBC_URL (" + redact(prefix) + ")";
  }

  @Override
  public void close() {
    // not ours to stop
  }

  static String redact(String url) {
    return url.replaceAll("(?i)(password=)[^&]*", "$1***");
  }
}
