package dev.retsu.lock.examples.app;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Settings of one subcommand, each from a {@code --flag} or else an environment variable (nested
 * with double underscores, as the Retsu worker reads them) or else its default. Errors name where
 * the bad value came from, so an operator knows what to fix.
 */
public final class Options {

  /**
   * One setting.
   *
   * @param env the environment variable, or null for a flag-only setting
   * @param flag the long flag, with its dashes
   * @param defaultValue shown in --help and used when neither is given; null for none
   * @param description one line for --help
   * @param isSwitch a flag without a value (true when present)
   * @param hidden left out of --help (internal plumbing between the demo and its children)
   */
  record Option(
      String env,
      String flag,
      String defaultValue,
      String description,
      boolean isSwitch,
      boolean hidden) {

    static Option of(String env, String flag, String defaultValue, String description) {
      return new Option(env, flag, defaultValue, description, false, false);
    }

    static Option toggle(String flag, String description) {
      return new Option(null, flag, null, description, true, false);
    }

    static Option hidden(String env, String flag) {
      return new Option(env, flag, null, "", false, true);
    }
  }

  /** A value and where it came from, for error messages. */
  private record Value(String text, String source) {}

  private static final Pattern SHORT_DURATION =
      Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)", Pattern.CASE_INSENSITIVE);

  private final String command;
  private final Map<Option, Value> values = new LinkedHashMap<>();

  private Options(String command) {
    this.command = command;
  }

  /**
   * Resolves every option: a flag wins over the environment, which wins over the default.
   *
   * @throws ConfigException for an unknown flag or a flag without its value
   */
  static Options parse(
      String command, List<Option> known, List<String> args, Map<String, String> env) {
    Options out = new Options(command);
    Map<String, Option> byFlag = new LinkedHashMap<>();
    for (Option o : known) {
      byFlag.put(o.flag(), o);
    }
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      String name = arg;
      String inline = null;
      int eq = arg.indexOf('=');
      if (arg.startsWith("--") && eq > 0) {
        name = arg.substring(0, eq);
        inline = arg.substring(eq + 1);
      }
      Option o = byFlag.get(name);
      if (o == null) {
        throw new ConfigException(
            "Unknown option '" + arg + "' for " + command + "; see '" + command + " --help'");
      }
      String text;
      if (o.isSwitch()) {
        if (inline != null) {
          throw new ConfigException(o.flag() + " takes no value, but was given '" + inline + "'");
        }
        text = "true";
      } else if (inline != null) {
        text = inline;
      } else if (i + 1 < args.size()) {
        text = args.get(++i);
      } else {
        throw new ConfigException(o.flag() + " needs a value");
      }
      out.values.put(o, new Value(text, o.flag()));
    }
    for (Option o : known) {
      if (out.values.containsKey(o)) {
        continue;
      }
      String fromEnv = o.env() == null ? null : env.get(o.env());
      if (fromEnv != null && !fromEnv.isBlank()) {
        out.values.put(o, new Value(fromEnv.trim(), o.env()));
      } else if (o.defaultValue() != null) {
        out.values.put(o, new Value(o.defaultValue(), "the default of " + o.flag()));
      }
    }
    return out;
  }

  /** Returns the usage text of a subcommand. */
  static String usage(String command, String summary, List<Option> known) {
    StringBuilder sb = new StringBuilder();
    sb.append("Usage: java -jar retsu-lock-examples.jar ")
        .append(command)
        .append(" [options]\n\n")
        .append(summary)
        .append("\n\nOptions (a flag wins over its environment variable):\n");
    for (Option o : known) {
      if (o.hidden()) {
        continue;
      }
      sb.append(String.format(Locale.ROOT, "  %-30s", o.flag() + (o.isSwitch() ? "" : " VALUE")));
      sb.append(o.description());
      if (o.defaultValue() != null) {
        sb.append(" (default ").append(o.defaultValue()).append(')');
      }
      sb.append('\n');
      if (o.env() != null) {
        sb.append(String.format(Locale.ROOT, "  %-30s", "")).append("env ").append(o.env());
        sb.append('\n');
      }
    }
    sb.append(String.format(Locale.ROOT, "  %-30s", "--help")).append("show this help\n");
    return sb.toString();
  }

  String command() {
    return command;
  }

  /** Returns the value as given, if any. */
  Optional<String> string(Option o) {
    Value v = values.get(o);
    return v == null ? Optional.empty() : Optional.of(v.text());
  }

  /** Returns the value, or fails naming the variable and flag when it is missing. */
  String required(Option o) {
    return string(o)
        .orElseThrow(
            () ->
                new ConfigException(
                    (o.env() != null ? o.env() + " (or " + o.flag() + ")" : o.flag())
                        + " is required for "
                        + command));
  }

  /** Returns where the value came from: the flag, the variable, or "the default of --flag". */
  String source(Option o) {
    Value v = values.get(o);
    return v == null ? o.flag() : v.source();
  }

  boolean isSet(Option o) {
    Value v = values.get(o);
    return v != null && !v.source().startsWith("the default");
  }

  boolean toggle(Option o) {
    return values.containsKey(o);
  }

  int intWithin(Option o, int min, int max, String what) {
    Value v = Objects.requireNonNull(values.get(o), o.flag());
    int n;
    try {
      n = Integer.parseInt(v.text().trim());
    } catch (NumberFormatException e) {
      throw bad(v, what + " within " + min + ".." + max);
    }
    if (n < min || n > max) {
      throw bad(v, what + " within " + min + ".." + max);
    }
    return n;
  }

  /** One of a few words, case-insensitive; returned in lower case. */
  String choice(Option o, List<String> allowed) {
    Value v = Objects.requireNonNull(values.get(o), o.flag());
    String word = v.text().trim().toLowerCase(Locale.ROOT);
    if (!allowed.contains(word)) {
      throw bad(v, "one of " + String.join(", ", allowed));
    }
    return word;
  }

  int port(Option o) {
    return intWithin(o, 1, 65535, "a TCP port");
  }

  long longWithin(Option o, long min, long max, String what) {
    Value v = Objects.requireNonNull(values.get(o), o.flag());
    try {
      long n = Long.parseLong(v.text().trim());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw bad(v, what + " within " + min + ".." + max);
  }

  /** A positive duration: ISO-8601 ({@code PT15S}) or a number with a unit ({@code 15s}). */
  Duration duration(Option o) {
    Value v = Objects.requireNonNull(values.get(o), o.flag());
    Duration d;
    try {
      d = parseDuration(v.text());
    } catch (IllegalArgumentException e) {
      throw bad(v, "a positive duration such as 15s, 500ms, 2m or PT15S");
    }
    if (d.isZero() || d.isNegative() || d.compareTo(Duration.ofDays(1)) > 0) {
      throw bad(v, "a positive duration of at most one day");
    }
    return d;
  }

  /**
   * Parses {@code PT15S} / {@code P1DT2H} (ISO-8601) or {@code 15s}, {@code 1.5s}, {@code 500ms},
   * {@code 2m}, {@code 1h}.
   *
   * @throws IllegalArgumentException if it is neither
   */
  static Duration parseDuration(String text) {
    String t = text.trim();
    if (t.length() > 1 && (t.charAt(0) == 'P' || t.charAt(0) == 'p')) {
      try {
        return Duration.parse(t.toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("not an ISO-8601 duration: " + text, e);
      }
    }
    Matcher m = SHORT_DURATION.matcher(t);
    if (!m.matches()) {
      throw new IllegalArgumentException("not a duration: " + text);
    }
    double amount = Double.parseDouble(m.group(1));
    double millis =
        switch (m.group(2).toLowerCase(Locale.ROOT)) {
          case "ms" -> amount;
          case "s" -> amount * 1_000;
          case "m" -> amount * 60_000;
          default -> amount * 3_600_000;
        };
    if (millis > Long.MAX_VALUE / 1_000_000.0) {
      throw new IllegalArgumentException("too long: " + text);
    }
    return Duration.ofNanos(Math.round(millis * 1_000_000));
  }

  /**
   * Renders a duration the way people write it back: 15s, 500ms, 2m.
   *
   * @param d the duration
   * @return its short form
   */
  public static String format(Duration d) {
    long ms = d.toMillis();
    if (ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0) {
      return ms / 60_000 + "m";
    }
    if (ms % 1_000 == 0) {
      return ms / 1_000 + "s";
    }
    return ms + "ms";
  }

  private static ConfigException bad(Value v, String expected) {
    return new ConfigException(
        v.source() + " must be " + expected + ", but was '" + v.text() + "'");
  }

  /** Splits arguments at {@code --help}; returns whether help was asked for. */
  static boolean wantsHelp(List<String> args) {
    return args.contains("--help") || args.contains("-h");
  }

  static List<String> rest(String[] args, int from) {
    List<String> out = new ArrayList<>();
    for (int i = from; i < args.length; i++) {
      out.add(args[i]);
    }
    return out;
  }
}
