package dev.retsu.lock.examples.http;

import java.util.Map;

/**
 * Just enough JSON for {@code /leader}: objects of strings, numbers, booleans, null and objects.
 */
public final class Json {

  private Json() {}

  /**
   * Writes a map (insertion order kept) as a JSON object.
   *
   * @param fields the fields: strings, numbers, booleans, null and maps of those
   * @return the JSON text
   */
  public static String object(Map<String, ?> fields) {
    StringBuilder sb = new StringBuilder("{");
    boolean first = true;
    for (Map.Entry<String, ?> e : fields.entrySet()) {
      if (!first) {
        sb.append(',');
      }
      first = false;
      sb.append(string(e.getKey())).append(':').append(value(e.getValue()));
    }
    return sb.append('}').toString();
  }

  private static String value(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Number || v instanceof Boolean) {
      return v.toString();
    }
    if (v instanceof Map<?, ?> m) {
      StringBuilder sb = new StringBuilder("{");
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        sb.append(string(String.valueOf(e.getKey()))).append(':').append(value(e.getValue()));
      }
      return sb.append('}').toString();
    }
    return string(v.toString());
  }

  static String string(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
