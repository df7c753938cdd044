package dev.retsu.lock.internal.session;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The settings a session we lock on carries, in the order they are applied: {@code
 * application_name} first, then the server-side bounds or the user's settings, and last the
 * session's own marker ({@value SessionSql#MARKER}, a random value per session). Applied in one
 * statement, bound as two text arrays; settings the server does not know are skipped. The same
 * arrays apply them again after {@code RESET ALL} or {@code DISCARD}. Immutable, thread-safe.
 */
public final class SessionSettings {

  private final Map<String, String> settings;
  private final String marker;

  private SessionSettings(Map<String, String> settings, String marker) {
    this.settings = settings;
    this.marker = marker;
  }

  /**
   * The settings of one session.
   *
   * @param applicationName its {@code application_name}
   * @param others further settings, in order
   * @param marker the session's marker value
   * @return the settings
   */
  public static SessionSettings of(
      String applicationName, Map<String, String> others, String marker) {
    Map<String, String> s = new LinkedHashMap<>();
    s.put("application_name", applicationName);
    s.putAll(others);
    s.put(SessionSql.MARKER, marker);
    return new SessionSettings(Collections.unmodifiableMap(s), marker);
  }

  /**
   * The same settings with another {@code application_name}: a term's, with its token, so that a
   * proof that applies the settings again after {@code RESET ALL} restores the term's name.
   *
   * @param applicationName the new name
   * @return the settings
   */
  SessionSettings withApplicationName(String applicationName) {
    Map<String, String> s = new LinkedHashMap<>(settings);
    s.put("application_name", applicationName);
    return new SessionSettings(Collections.unmodifiableMap(s), marker);
  }

  /** The session's marker value. */
  String marker() {
    return marker;
  }

  /** The value of one setting, or null. */
  String get(String name) {
    return settings.get(name);
  }

  /** Binds the names and the values as two text arrays; returns the next free index. */
  int bind(Connection conn, PreparedStatement ps, int index) throws SQLException {
    ps.setArray(index, conn.createArrayOf("text", settings.keySet().toArray()));
    ps.setArray(index + 1, conn.createArrayOf("text", settings.values().toArray()));
    return index + 2;
  }

  /**
   * The settings the server applied, without {@code application_name} and the marker (always set).
   *
   * @param names the names the statement returned
   * @return the names, in order
   */
  List<String> applied(Array names) throws SQLException {
    List<String> applied = new ArrayList<>();
    if (names != null) {
      Collections.addAll(applied, (String[]) names.getArray());
    }
    applied.remove("application_name");
    applied.remove(SessionSql.MARKER);
    return Collections.unmodifiableList(applied);
  }

  /** The settings the server did not know (for a DEBUG line), from what it applied. */
  List<String> unknown(List<String> applied) {
    List<String> missing = new ArrayList<>(settings.keySet());
    missing.remove("application_name");
    missing.remove(SessionSql.MARKER);
    missing.removeAll(applied);
    return missing;
  }
}
