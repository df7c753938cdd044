package dev.retsu.lock.cli;

import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LockKey;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The parsed command line: a command, where to connect, which keys, and the flags. Immutable.
 *
 * @param command {@code who} or {@code evict}
 * @param url the JDBC URL
 * @param user the user, or null (then the URL's or {@code PGUSER})
 * @param password the password, or null (then the URL's or {@code PGPASSWORD})
 * @param keys the keys asked about: one, or a group's partitions in order
 * @param labels each key's name for people ({@code namespace:name}, {@code group/partition}), or
 *     null for a bare bigint
 * @param group the group's namespace, or null
 * @param watch stream changes until stopped
 * @param json one JSON object per line
 * @param yes evict without asking
 * @param candidateRole the role the candidates log in as, or null for the CLI's own login role
 */
record Options(
    String command,
    String url,
    String user,
    String password,
    List<LockKey> keys,
    List<String> labels,
    String group,
    boolean watch,
    boolean json,
    boolean yes,
    String candidateRole) {

  static final Set<String> COMMANDS = Set.of("who", "evict");
  private static final Set<String> FLAGS = Set.of("--watch", "--json", "--yes", "--help");
  private static final Set<String> VALUED =
      Set.of(
          "--url",
          "--user",
          "--password",
          "--key",
          "--namespace",
          "--name",
          "--group",
          "--partitions",
          "--candidate-role");
  private static final String ALLOWED =
      "--url, --user, --password, --key, --namespace, --name, --group, --partitions,"
          + " --candidate-role, --watch, --json, --yes, --help";

  /** {@return true when {@code --help} was asked for} */
  static boolean wantsHelp(String[] args) {
    if (args.length > 0 && args[0].equals("help")) {
      return true;
    }
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--help") || args[i].equals("-h")) {
        return true;
      }
      if (VALUED.contains(args[i])) {
        i++; // a value, even one that reads "--help", e.g. --name --help
      }
    }
    return false;
  }

  static Options parse(String[] args) throws UsageException {
    String command = "who";
    int i = 0;
    if (args.length > 0 && !args[0].startsWith("-")) {
      if (!COMMANDS.contains(args[0])) {
        throw new UsageException(
            "unknown command \"" + shorten(args[0]) + "\"; allowed: who (the default), evict");
      }
      command = args[0];
      i = 1;
    }
    Map<String, String> values = new HashMap<>();
    List<String> flags = new ArrayList<>();
    for (; i < args.length; i++) {
      String a = args[i];
      String name = a;
      String value = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        name = a.substring(0, eq);
        value = a.substring(eq + 1);
      }
      if (FLAGS.contains(name)) {
        if (value != null) {
          throw new UsageException(
              name + " takes no value, but was given \"" + shorten(value) + "\"");
        }
        if (flags.contains(name)) {
          throw new UsageException(name + " is given twice");
        }
        flags.add(name);
      } else if (VALUED.contains(name)) {
        if (value == null) {
          if (i + 1 >= args.length) {
            throw new UsageException(name + " needs a value");
          }
          value = args[++i];
        }
        if (values.put(name, value) != null) {
          throw new UsageException(name + " is given twice");
        }
      } else if (!a.startsWith("-")) {
        throw new UsageException(
            "unexpected argument \""
                + shorten(a)
                + "\"; the command (who or evict) comes first, every other value after its option");
      } else {
        throw new UsageException("unknown option \"" + shorten(name) + "\"; allowed: " + ALLOWED);
      }
    }

    String url = values.get("--url");
    if (url == null) {
      throw new UsageException(
          "--url is required: a PostgreSQL JDBC URL, jdbc:postgresql://host[:port]/database");
    }
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new UsageException(
          "--url must be a PostgreSQL JDBC URL, jdbc:postgresql://host[:port]/database, but was \""
              + shorten(redact(url))
              + "\"");
    }

    List<LockKey> keys = new ArrayList<>();
    List<String> labels = new ArrayList<>();
    String group = values.get("--group");
    String key = values.get("--key");
    String namespace = values.get("--namespace");
    String keyName = values.get("--name");
    int ways =
        (key != null ? 1 : 0)
            + (namespace != null || keyName != null ? 1 : 0)
            + (group != null ? 1 : 0);
    if (ways != 1) {
      throw new UsageException(
          "name exactly one key: --key <bigint>, --namespace <ns> --name <name>, or --group <ns>"
              + " --partitions <n>"
              + (ways > 1 ? ", but more than one was given" : ""));
    }
    if (values.containsKey("--partitions") && group == null) {
      throw new UsageException("--partitions goes with --group");
    }
    if (key != null) {
      try {
        keys.add(LockKey.of(Long.parseLong(key.trim())));
      } catch (NumberFormatException e) {
        throw new UsageException(
            "--key must be a bigint, "
                + Long.MIN_VALUE
                + " to "
                + Long.MAX_VALUE
                + ", but was \""
                + shorten(key)
                + "\"");
      }
      labels.add(null);
    } else if (group == null) {
      if (namespace == null || keyName == null) {
        throw new UsageException("--namespace and --name go together, but only one was given");
      }
      keys.add(named(namespace, keyName));
      labels.add(namespace + ":" + keyName);
    } else {
      String p = values.get("--partitions");
      if (p == null) {
        throw new UsageException(
            "--group needs --partitions <n>: the group's keys are --namespace <group> --name 0 to"
                + " n-1, as LeaderGroup.partitioned builds them");
      }
      int n;
      try {
        n = Integer.parseInt(p.trim());
      } catch (NumberFormatException e) {
        n = -1;
      }
      if (n < 1 || n > LeaderGroup.MAX_KEYS) {
        throw new UsageException(
            "--partitions must be a whole number from 1 to "
                + LeaderGroup.MAX_KEYS
                + ", but was \""
                + shorten(p)
                + "\"");
      }
      for (int k = 0; k < n; k++) {
        keys.add(named(group, String.valueOf(k)));
        labels.add(group + ":" + k);
      }
    }

    boolean watch = flags.contains("--watch");
    boolean yes = flags.contains("--yes");
    if (command.equals("evict")) {
      if (watch) {
        throw new UsageException("--watch goes with who, not evict");
      }
      if (group != null) {
        throw new UsageException(
            "evict takes one key (--key, or --namespace and --name; a group's partition p is"
                + " --namespace <group> --name <p>), not --group: a member's session holds several"
                + " keys");
      }
    } else if (yes) {
      throw new UsageException("--yes goes with evict, not who");
    }
    String candidateRole = values.get("--candidate-role");
    if (candidateRole != null) {
      if (command.equals("evict")) {
        throw new UsageException(
            "--candidate-role goes with who, not evict (evict terminates whichever session holds"
                + " the key)");
      }
      if (candidateRole.isBlank()) {
        throw new UsageException("--candidate-role must name a role, but was empty");
      }
      if (candidateRole.indexOf('\\') >= 0 || candidateRole.indexOf('\0') >= 0) {
        throw new UsageException(
            "--candidate-role must not contain a backslash or NUL, but was \""
                + shorten(candidateRole)
                + "\"");
      }
    }
    return new Options(
        command,
        url,
        values.get("--user"),
        values.get("--password"),
        List.copyOf(keys),
        Collections.unmodifiableList(labels),
        group,
        watch,
        flags.contains("--json"),
        yes,
        candidateRole);
  }

  private static LockKey named(String namespace, String name) throws UsageException {
    try {
      return LockKey.named(namespace, name);
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
  }

  /** The URL without a {@code password=} value, for messages. */
  static String redact(String url) {
    return url.replaceAll("(?i)(password=)[^&]*", "$1***");
  }

  static String shorten(String s) {
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }
}
