package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * The pages (the README, docs/, module READMEs: {@link ReadmeSnippets#pages}) are written for
 * readers: a test's name belongs in the page's one {@code ## Proofs} table, which maps each promise
 * to the tests that would fail if it were false, never in the prose around it. Every row of that
 * table names at least one test, so that no promise is left without its proof.
 */
class DocsProofsTablesTest {

  private static final Path ROOT = Path.of("..");

  private static final String PROOFS = "## Proofs";

  /** A backticked lower-camel name, long enough not to be a word (as DocsNameRealTestsTest). */
  private static final Pattern NAME = Pattern.compile("`([a-z][A-Za-z0-9]{19,})`");

  /** A backticked test class, such as {@code WhoLeadsCheckerTest}. */
  private static final Pattern CLASS = Pattern.compile("`([A-Z][A-Za-z0-9]*Test)`");

  /** A test method: declared {@code void} in a test source. */
  private static final Pattern TEST_METHOD =
      Pattern.compile("\\bvoid\\s+([a-z][A-Za-z0-9]{19,})\\s*\\(");

  /**
   * Any method a main source declares or calls, or looks up by its name (a pool's method): an API
   * name, not a test's.
   */
  private static final Pattern METHOD =
      Pattern.compile("\\b([a-z][A-Za-z0-9]{19,})\\s*\\(|\"([a-z][A-Za-z0-9]{19,})\"");

  private static final Pattern HEADING = Pattern.compile("^## ", Pattern.MULTILINE);

  @Test
  void testNamesAppearOnlyInTheProofsTableAndEveryRowNamesATest() throws IOException {
    Set<String> tests = new TreeSet<>();
    Set<String> testClasses = new TreeSet<>();
    Set<String> api = new TreeSet<>();
    for (Path source : ReadmeSnippets.files(ROOT, ".java")) {
      boolean test = source.toString().contains("/src/test/");
      collect(source, test ? TEST_METHOD : METHOD, test ? tests : api);
      String file = source.getFileName().toString();
      if (test && file.endsWith("Test.java")) {
        testClasses.add(file.substring(0, file.length() - ".java".length()));
      }
    }
    tests.removeAll(api);
    assertThat(tests).as("test methods found in the sources").hasSizeGreaterThan(100);

    List<String> inProse = new ArrayList<>();
    List<String> unproven = new ArrayList<>();
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      String text = Files.readString(page);
      String name = ROOT.relativize(page).toString();
      int proofs = text.indexOf("\n" + PROOFS + "\n");
      String prose = proofs < 0 ? text : text.substring(0, proofs);
      String table = proofs < 0 ? "" : text.substring(proofs + 1);
      Matcher next = HEADING.matcher(table);
      if (!table.isEmpty() && next.find(PROOFS.length())) {
        prose = prose + table.substring(next.start());
        table = table.substring(0, next.start());
      }
      assertThat(prose).as("%s has one %s section", name, PROOFS).doesNotContain(PROOFS);
      Matcher m = NAME.matcher(prose);
      while (m.find()) {
        if (tests.contains(m.group(1))) {
          inProse.add(name + ": " + m.group(1));
        }
      }
      for (String row : table.split("\n")) {
        if (!row.startsWith("|") || row.startsWith("| promise") || row.matches("[|\\s:-]+")) {
          continue;
        }
        if (!namesATest(row, tests, testClasses)) {
          unproven.add(name + ": " + row);
        }
      }
    }
    SoftAssertions.assertSoftly(
        soft -> {
          soft.assertThat(inProse)
              .as(
                  "test names in a page's prose: move each into its %s table, by its promise",
                  PROOFS)
              .isEmpty();
          soft.assertThat(unproven).as("%s rows that name no test", PROOFS).isEmpty();
        });
  }

  private static boolean namesATest(String row, Set<String> tests, Set<String> testClasses) {
    Matcher m = NAME.matcher(row);
    while (m.find()) {
      if (tests.contains(m.group(1))) {
        return true;
      }
    }
    Matcher c = CLASS.matcher(row);
    while (c.find()) {
      if (testClasses.contains(c.group(1))) {
        return true;
      }
    }
    return false;
  }

  private static void collect(Path source, Pattern pattern, Set<String> into) {
    try {
      Matcher m = pattern.matcher(Files.readString(source));
      while (m.find()) {
        into.add(m.group(1) != null ? m.group(1) : m.group(2));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
