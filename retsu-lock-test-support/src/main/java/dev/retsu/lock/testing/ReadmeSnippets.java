package dev.retsu.lock.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Keeps README code snippets honest. A README block preceded by {@code <!-- snippet:module/name
 * -->} must equal (ignoring white space, so formatting may differ) the code between {@code //
 * snippet:module/name} and {@code // end-snippet} in a test source of that module, where it
 * compiles and runs.
 */
public final class ReadmeSnippets {

  private static final Pattern README_BLOCK =
      Pattern.compile(
          "<!-- snippet:([a-z0-9-]+/[a-z0-9-]+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

  private ReadmeSnippets() {}

  /**
   * Returns the README snippets of one module.
   *
   * @param readme the README file
   * @param module the module prefix, e.g. {@code core}
   * @return snippet name to code, in README order
   */
  public static Map<String, String> readmeSnippets(Path readme, String module) {
    Map<String, String> out = new LinkedHashMap<>();
    Matcher m = README_BLOCK.matcher(read(readme));
    while (m.find()) {
      if (m.group(1).startsWith(module + "/")) {
        out.put(m.group(1), m.group(2));
      }
    }
    return out;
  }

  /**
   * Checks every README snippet of a module against the given test sources.
   *
   * @param readme the README file
   * @param module the module prefix, e.g. {@code core}
   * @param sources test sources that hold the snippets
   * @return the names checked
   * @throws AssertionError naming the first snippet that is missing or differs
   */
  public static List<String> verify(Path readme, String module, Path... sources) {
    Map<String, String> snippets = readmeSnippets(readme, module);
    String all =
        java.util.Arrays.stream(sources)
            .map(ReadmeSnippets::read)
            .collect(Collectors.joining("\n"));
    for (Map.Entry<String, String> e : snippets.entrySet()) {
      Pattern region =
          Pattern.compile(
              "// snippet:" + Pattern.quote(e.getKey()) + "\\n(.*?)// end-snippet", Pattern.DOTALL);
      Matcher m = region.matcher(all);
      if (!m.find()) {
        throw new AssertionError(
            "README snippet " + e.getKey() + " has no '// snippet:" + e.getKey() + "' region");
      }
      String expected = e.getValue().strip();
      String actual = m.group(1).strip();
      if (!normalize(expected).equals(normalize(actual))) {
        throw new AssertionError(
            "README snippet "
                + e.getKey()
                + " differs from the tested code.\n--- README ---\n"
                + expected
                + "\n--- test ---\n"
                + actual);
      }
    }
    return List.copyOf(snippets.keySet());
  }

  /**
   * Returns the number of java code blocks in a README that no snippet marker names, so that a test
   * can insist every Java example is compiled somewhere.
   *
   * @param readme the README file
   * @return how many java blocks lack a marker
   */
  public static int unmarkedJavaBlocks(Path readme) {
    String text = read(readme);
    int count = 0;
    int at = text.indexOf("```java");
    while (at >= 0) {
      String before = text.substring(Math.max(0, at - 200), at).stripTrailing();
      if (!before.matches("(?s).*<!-- snippet:[a-z0-9-]+/[a-z0-9-]+ -->$")) {
        count++;
      }
      at = text.indexOf("```java", at + 1);
    }
    return count;
  }

  private static String normalize(String code) {
    return code.replaceAll("\\s+", "");
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + p, e);
    }
  }
}
