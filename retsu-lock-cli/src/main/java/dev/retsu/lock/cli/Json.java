package dev.retsu.lock.cli;

import java.time.Instant;
import java.util.Optional;

/**
 * A minimal JSON object writer: keys in the order written, strings escaped per RFC 8259, absent
 * values as {@code null}. Enough for the CLI's flat records; not thread-safe.
 */
final class Json {

  private final StringBuilder out = new StringBuilder("{");
  private boolean first = true;

  private Json key(String name) {
    if (!first) {
      out.append(',');
    }
    first = false;
    quote(out, name);
    out.append(':');
    return this;
  }

  Json str(String name, String value) {
    key(name);
    if (value == null) {
      out.append("null");
    } else {
      quote(out, value);
    }
    return this;
  }

  Json str(String name, Optional<?> value) {
    return str(name, value.map(Object::toString).orElse(null));
  }

  Json time(String name, Optional<Instant> value) {
    return str(name, value.map(Instant::toString).orElse(null));
  }

  Json num(String name, long value) {
    key(name);
    out.append(value);
    return this;
  }

  Json num(String name, Integer value) {
    key(name);
    out.append(value == null ? "null" : value.toString());
    return this;
  }

  Json num(String name, java.util.OptionalLong value) {
    key(name);
    out.append(value.isPresent() ? String.valueOf(value.getAsLong()) : "null");
    return this;
  }

  Json bool(String name, boolean value) {
    key(name);
    out.append(value);
    return this;
  }

  /** Writes a nested object, or {@code null}. */
  Json obj(String name, Json value) {
    key(name);
    out.append(value == null ? "null" : value.toString());
    return this;
  }

  /** Writes an array of objects. */
  Json arr(String name, Iterable<Json> values) {
    key(name);
    out.append('[');
    boolean firstItem = true;
    for (Json v : values) {
      if (!firstItem) {
        out.append(',');
      }
      firstItem = false;
      out.append(v);
    }
    out.append(']');
    return this;
  }

  @Override
  public String toString() {
    return out + "}";
  }

  static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}
