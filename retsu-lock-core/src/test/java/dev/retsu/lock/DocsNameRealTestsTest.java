package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The pages (the README, docs/, module READMEs: {@link ReadmeSnippets#pages}) back each promise
 * with the name of a test (or benchmark) in backticks. A renamed or deleted test would leave the
 * promise pointing at nothing; this test fails then.
 */
class DocsNameRealTestsTest {

  private static final Path ROOT = Path.of("..");

  /** A test method's name as the docs write it: lower camel case, long enough not to be a word. */
  private static final Pattern NAME = Pattern.compile("`([a-z][A-Za-z0-9]{19,})`");

  /** A method declared or called, or a name the code looks up as a string (a pool's method). */
  private static final Pattern METHOD =
      Pattern.compile("\\b([a-z][A-Za-z0-9]{19,})\\s*\\(|\"([a-z][A-Za-z0-9]{19,})\"");

  @Test
  void everyTestNameInTheDocsIsAMethodInTheSources() throws IOException {
    List<Path> docs = ReadmeSnippets.pages(ROOT);
    assertThat(docs).contains(ROOT.resolve("README.md"), ROOT.resolve("docs/GUARANTEES.md"));
    Set<String> named = new TreeSet<>();
    for (Path doc : docs) {
      Matcher m = NAME.matcher(Files.readString(doc));
      while (m.find()) {
        named.add(m.group(1));
      }
    }
    Set<String> methods = new TreeSet<>();
    for (Path source : ReadmeSnippets.files(ROOT, ".java")) {
      collectMethods(source, methods);
    }

    assertThat(named).as("test names the docs cite").isNotEmpty();
    assertThat(named)
        .as(
            "cited on a page (README, docs/, a module README), but no such method among %d",
            methods.size())
        .isSubsetOf(methods);
  }

  private static void collectMethods(Path source, Set<String> into) {
    try {
      Matcher m = METHOD.matcher(Files.readString(source));
      while (m.find()) {
        into.add(m.group(1) != null ? m.group(1) : m.group(2));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
