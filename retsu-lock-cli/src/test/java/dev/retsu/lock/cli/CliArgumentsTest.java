package dev.retsu.lock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.LockKey;
import org.junit.jupiter.api.Test;

/** Bad input is refused before any connection, with exit code 2 and a message naming it. */
class CliArgumentsTest {

  private static final String URL = "--url=jdbc:postgresql://localhost:1/none";

  private static CliRun refused(String expected, String... args) {
    CliRun r = CliRun.plain();
    assertThat(r.run(args)).as("exit code of %s", String.join(" ", args)).isEqualTo(Cli.USAGE);
    assertThat(r.err()).contains("retsu-lock-cli: " + expected).contains("Run with --help");
    assertThat(r.out()).isEmpty();
    return r;
  }

  @Test
  void badArgumentsExitWithTwoAndNameTheValueAndWhatIsAllowed() {
    refused("--url is required", "--key", "1");
    refused(
        "--url must be a PostgreSQL JDBC URL, jdbc:postgresql://host[:port]/database, but was"
            + " \"jdbc:mysql://h/d?user=a&password=***\"",
        "--url",
        "jdbc:mysql://h/d?user=a&password=secret",
        "--key",
        "1");
    refused(
        "--key must be a bigint, -9223372036854775808 to 9223372036854775807, but was \"12x\"",
        URL,
        "--key",
        "12x");
    refused("name exactly one key", URL);
    refused(
        "name exactly one key: --key <bigint>, --namespace <ns> --name <name>, or --group <ns>"
            + " --partitions <n>, but more than one was given",
        URL,
        "--key",
        "1",
        "--group",
        "g",
        "--partitions",
        "2");
    refused("--namespace and --name go together", URL, "--namespace", "billing");
    refused(
        "namespace must not contain ':' (it separates namespace and name), but was \"a:b\"",
        URL,
        "--namespace",
        "a:b",
        "--name",
        "x");
    refused("--group needs --partitions <n>", URL, "--group", "g");
    refused(
        "--partitions must be a whole number from 1 to 100000, but was \"0\"",
        URL,
        "--group",
        "g",
        "--partitions",
        "0");
    refused("unknown option \"--kye\"; allowed: --url", URL, "--kye", "1");
    refused("unknown command \"whom\"; allowed: who (the default), evict", "whom", URL);
    refused("--key is given twice", URL, "--key", "1", "--key", "2");
    refused("--key needs a value", URL, "--key");
    refused("--json takes no value", URL, "--key", "1", "--json=yes");
    refused("--watch goes with who, not evict", "evict", URL, "--key", "1", "--watch");
    refused("--yes goes with evict, not who", URL, "--key", "1", "--yes");
    refused("evict takes one key", "evict", URL, "--group", "g", "--partitions", "2");
  }

  @Test
  void candidateRoleGoesWithWhoAndNamesARole() throws Exception {
    refused(
        "--candidate-role goes with who, not evict",
        "evict",
        URL,
        "--key",
        "1",
        "--candidate-role",
        "app");
    assertThat(
            Options.parse(new String[] {URL, "--key", "1", "--watch", "--candidate-role", "app"})
                .candidateRole())
        .isEqualTo("app");
    refused(
        "--candidate-role must name a role, but was empty",
        URL,
        "--key",
        "1",
        "--candidate-role",
        " ");
    refused(
        "--candidate-role must not contain a backslash or NUL, but was \"bad\\role\"",
        URL,
        "--key",
        "1",
        "--candidate-role",
        "bad\\role");
    assertThat(Options.parse(new String[] {URL, "--key", "1"}).candidateRole()).isNull();
    assertThat(
            Options.parse(new String[] {URL, "--key", "1", "--candidate-role=app"}).candidateRole())
        .isEqualTo("app");
  }

  @Test
  void helpPrintsTheUsageAndExitsWithZero() {
    CliRun r = CliRun.plain();
    assertThat(r.run("--help")).isEqualTo(Cli.OK);
    assertThat(r.out()).contains("Exit codes:").contains("--namespace NS --name NAME");
    assertThat(Options.wantsHelp(new String[] {URL, "--namespace", "ops", "--name", "help"}))
        .as("a key named help is a key")
        .isFalse();
    assertThat(Options.wantsHelp(new String[] {URL, "--name", "--help"})).isFalse();
    assertThat(Options.wantsHelp(new String[] {"evict", "-h"})).isTrue();
  }

  @Test
  void namespaceAndNameMapToTheKeyLockKeyNamedDerives() throws Exception {
    Options o =
        Options.parse(new String[] {URL, "--namespace", "billing", "--name", "send-invoices"});
    assertThat(o.keys()).containsExactly(LockKey.named("billing", "send-invoices"));
    Options g = Options.parse(new String[] {URL, "--group", "billing", "--partitions", "3"});
    assertThat(g.keys())
        .containsExactly(
            LockKey.named("billing", "0"),
            LockKey.named("billing", "1"),
            LockKey.named("billing", "2"));
    assertThat(Options.parse(new String[] {URL, "--key=-42"}).keys())
        .containsExactly(LockKey.of(-42));
  }

  @Test
  void jsonEscapesQuotesBackslashesAndControlCharacters() {
    assertThat(
            new Json()
                .str("a", "x\"y\\z\n\u0001")
                .num("n", 3)
                .str("none", (String) null)
                .toString())
        .isEqualTo("{\"a\":\"x\\\"y\\\\z\\n\\u0001\",\"n\":3,\"none\":null}");
  }
}
