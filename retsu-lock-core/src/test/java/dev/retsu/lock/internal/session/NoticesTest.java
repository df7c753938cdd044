package dev.retsu.lock.internal.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LockKey;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Both channels' formats, without a database: what the token statements' SQL sends, and what the
 * Java side sends, is what the readers read.
 */
class NoticesTest {

  private static final FencingToken TOKEN = new FencingToken(1, 704_643_112L, 12_059L);

  /**
   * Evaluates a concatenation of SQL string literals and {@code ?::text} parameters joined by
   * {@code ||}, the only shape {@link Notices#acquiredPayloadSql} makes once its column expressions
   * are literals.
   */
  private static String render(String sql, String... parameters) {
    StringBuilder out = new StringBuilder();
    int next = 0;
    List<String> parts = new ArrayList<>();
    int at = 0;
    while (at < sql.length()) {
      char c = sql.charAt(at);
      if (c == '\'') {
        int end = at + 1;
        StringBuilder lit = new StringBuilder();
        while (true) {
          char d = sql.charAt(end);
          if (d == '\'' && end + 1 < sql.length() && sql.charAt(end + 1) == '\'') {
            lit.append('\'');
            end += 2;
          } else if (d == '\'') {
            break;
          } else {
            lit.append(d);
            end++;
          }
        }
        parts.add(lit.toString());
        at = end + 1;
      } else if (sql.startsWith("?::text", at)) {
        parts.add(parameters[next++]);
        at += "?::text".length();
      } else if (sql.startsWith(" || ", at)) {
        at += 4;
      } else {
        throw new IllegalArgumentException("not a concatenation of literals at " + at + ": " + sql);
      }
    }
    parts.forEach(out::append);
    assertThat(next).as("every parameter used").isEqualTo(parameters.length);
    return out.toString();
  }

  private static String literal(String s) {
    return "'" + s.replace("'", "''") + "'";
  }

  @Test
  void theAcquiredNoticeTheSqlSendsIsTheOneTheReaderReads() {
    String keyId = Notices.keyId(LockKey.of(7, 9));
    String payload =
        render(
            Notices.acquiredPayloadSql(literal(keyId), literal("4711"), literal(TOKEN.toString())),
            "node-a");

    assertThat(payload).isEqualTo("acquired 2:7:9 4711 A1I704643112E12059 node-a");
    assertThat(Notices.parse(payload))
        .contains(new Notices.Notice(Notices.Kind.ACQUIRED, "2:7:9", 4711, TOKEN, "node-a"));
    assertThat(Notices.acquiredSql("k", "p", "t"))
        .startsWith("pg_catalog.pg_notify('" + Notices.CHANNEL + "', ")
        .contains(Notices.acquiredPayloadSql("k", "p", "t"));
  }

  @Test
  void aCandidateNameWithSpacesStaysWhole() {
    String payload =
        render(
            Notices.acquiredPayloadSql(literal("1:5"), literal("12"), literal(TOKEN.toString())),
            "host a pid 3");

    assertThat(Notices.parse(payload).orElseThrow().candidateId()).isEqualTo("host a pid 3");
  }

  @Test
  void theReleasedNoticeIsReadBack() {
    String payload = Notices.released(LockKey.of(42L), 99, TOKEN);

    assertThat(payload).isEqualTo("released 1:42 99 A1I704643112E12059");
    assertThat(Notices.parse(payload))
        .contains(new Notices.Notice(Notices.Kind.RELEASED, "1:42", 99, TOKEN, null));
  }

  @Test
  void anythingElseOnTheChannelIsNoNotice() {
    assertThat(Notices.parse(null)).isEmpty();
    assertThat(Notices.parse("acquired 1:42 99 A1I704643112E12059")).isEmpty(); // no candidate
    assertThat(Notices.parse("released 1:42 x A1I704643112E12059")).isEmpty();
    assertThat(Notices.parse("released 1:42 99 1/12059")).isEmpty(); // the old token form
    assertThat(Notices.parse("stolen 1:42 99 A1I704643112E12059 me")).isEmpty();
  }

  @Test
  void aGroupsNoticesAreTheWordsItsWatchReads() {
    assertThat(Notices.joined(3)).isEqualTo("joined:3");
    assertThat(Notices.left(3)).isEqualTo("left:3");
    assertThat(Notices.gone(3)).isEqualTo("gone:3");
    assertThat(Notices.handOff(Notices.yielded(5, 30_000), 8, 300_000))
        .isEqualTo(new Notices.HandOff(5, 30_000));
    assertThat(Notices.handOff(Notices.yielded(5, 900_000), 8, 300_000))
        .isEqualTo(new Notices.HandOff(5, 300_000));
    assertThat(Notices.handOff(Notices.joined(5), 8, 300_000)).isNull();
  }
}
