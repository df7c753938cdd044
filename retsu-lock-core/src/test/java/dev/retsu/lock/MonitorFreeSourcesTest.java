package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No module's main code blocks inside a monitor: no {@code synchronized} block or method and no
 * {@code Object.wait}, read from the sources as text (comments and strings left out). On Java 21 to
 * 23 a virtual thread that blocks inside a monitor pins its carrier, and the JFR run of the {@code
 * virtual-threads} profile is on a later Java, where it no longer does: this is the check for the
 * earlier ones. The library blocks under {@code ReentrantLock}. The benchmark harness is not
 * library code and is left out.
 */
class MonitorFreeSourcesTest {

  private static final Pattern COMMENTS = Pattern.compile("(?s)/\\*.*?\\*/|//[^\\n]*");
  private static final Pattern STRINGS = Pattern.compile("\"(?:[^\"\\\\\\n]++|\\\\.)*+\"");
  private static final Pattern CHARS = Pattern.compile("'(?:[^'\\\\]|\\\\.)'");
  private static final Pattern MONITOR =
      Pattern.compile("\\bsynchronized\\b|(?<![\\w.])wait\\s*\\(|\\.wait\\s*\\(");

  @Test
  void noLibrarySourceBlocksInsideAMonitor() throws IOException {
    List<Path> roots = mainSourceRoots();
    assertThat(roots)
        .as("the modules' main sources, from core's directory")
        .extracting(p -> p.getParent().getParent().getParent().getFileName().toString())
        .contains("retsu-lock-core", "retsu-lock-micrometer", "retsu-lock-spring-boot-common");

    List<String> found = new ArrayList<>();
    for (Path root : roots) {
      try (Stream<Path> files = Files.walk(root)) {
        for (Path f :
            (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
          found.addAll(monitors(f, Files.readString(f)));
        }
      }
    }

    assertThat(found).as("synchronized or Object.wait in library code").isEmpty();
  }

  /** The check finds what it looks for: a planted block, method and wait, not a comment. */
  @Test
  void theCheckFindsABlockAMethodAndAWaitButNotACommentOrAString() {
    String code =
        "class X {\n"
            + "  // synchronized in a comment, and wait() too\n"
            + "  String s = \"synchronized (this) { wait(); }\";\n"
            + "  Object m = java.util.Collections.synchronizedMap(new java.util.HashMap<>());\n"
            + "  void a() { synchronized (this) { } }\n"
            + "  synchronized void b() { }\n"
            + "  void c() throws Exception { lock.wait(10); }\n"
            + "  void d() throws Exception { wait(); }\n"
            + "  void e() { cond.await(); latch.await(); }\n"
            + "}\n";

    assertThat(monitors(Path.of("X.java"), code))
        .containsExactly("X.java:5", "X.java:6", "X.java:7", "X.java:8");
  }

  private static List<String> monitors(Path file, String source) {
    String code = blank(CHARS, blank(STRINGS, blank(COMMENTS, source)));
    List<String> out = new ArrayList<>();
    Matcher m = MONITOR.matcher(code);
    while (m.find()) {
      int line = 1 + (int) code.substring(0, m.start()).chars().filter(c -> c == '\n').count();
      out.add(file + ":" + line);
    }
    return out;
  }

  /** Replaces each match by spaces, keeping its line breaks, so line numbers stay true. */
  private static String blank(Pattern p, String s) {
    Matcher m = p.matcher(s);
    StringBuilder b = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(b, Matcher.quoteReplacement(m.group().replaceAll("[^\\n]", " ")));
    }
    m.appendTail(b);
    return b.toString();
  }

  private static List<Path> mainSourceRoots() throws IOException {
    try (Stream<Path> modules = Files.list(Path.of("..").toAbsolutePath().normalize())) {
      return modules
          .filter(p -> p.getFileName().toString().startsWith("retsu-lock-"))
          .filter(p -> !p.getFileName().toString().equals("retsu-lock-benchmarks"))
          .map(p -> p.resolve("src/main/java"))
          .filter(Files::isDirectory)
          .sorted()
          .collect(Collectors.toList());
    }
  }
}
