package dev.retsu.lock.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The engine's layers point one way, read from the core's sources as text: an internal package
 * imports only the layers below it (session, then term, then loop, group and watch), and no two
 * source files reach each other through their references across packages (an import circle), the
 * shape in which a facade's constant or a record's factory once tied a lower layer back to the API.
 */
class LayersTest {

  private static final Path MAIN = Path.of("src/main/java");
  private static final String BASE = "dev.retsu.lock";

  /** The order of the internal layers: a package may use only packages of a lower rank. */
  private static final Map<String, Integer> RANK =
      Map.of(
          BASE + ".internal", 0,
          BASE + ".internal.session", 1,
          BASE + ".internal.term", 2,
          BASE + ".internal.loop", 3,
          BASE + ".internal.group", 3,
          BASE + ".internal.watch", 3);

  private static final Pattern PACKAGE = Pattern.compile("(?m)^package ([\\w.]+);");
  private static final Pattern IMPORT =
      Pattern.compile("(?m)^import (?:static )?(dev\\.retsu\\.lock[\\w.]*?\\.[A-Z]\\w*)");
  private static final Pattern QUALIFIED =
      Pattern.compile("\\b(dev\\.retsu\\.lock(?:\\.[a-z]\\w*)*\\.[A-Z]\\w*)");
  private static final Pattern COMMENTS = Pattern.compile("(?s)/\\*.*?\\*/|//[^\\n]*");
  private static final Pattern STRINGS = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"");

  /** Each source file's type (package.Name) to the types it refers to, comments left out. */
  private static Map<String, Set<String>> references() throws IOException {
    Map<String, String> code = new TreeMap<>();
    Map<String, List<String>> byPackage = new HashMap<>();
    try (Stream<Path> files = Files.walk(MAIN)) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
        String name = f.getFileName().toString().replace(".java", "");
        if (name.contains("-")) {
          continue; // module-info, package-info
        }
        String text = Files.readString(f);
        Matcher p = PACKAGE.matcher(text);
        assertThat(p.find()).as("%s has a package", f).isTrue();
        String type = p.group(1) + "." + name;
        code.put(type, STRINGS.matcher(COMMENTS.matcher(text).replaceAll(" ")).replaceAll("\"\""));
        byPackage.computeIfAbsent(p.group(1), k -> new ArrayList<>()).add(name);
      }
    }
    Map<String, Set<String>> refs = new TreeMap<>();
    code.forEach(
        (type, text) -> {
          Set<String> to = new TreeSet<>();
          for (Pattern pattern : List.of(IMPORT, QUALIFIED)) {
            Matcher m = pattern.matcher(text);
            while (m.find()) {
              if (code.containsKey(m.group(1))) {
                to.add(m.group(1));
              }
            }
          }
          String pkg = type.substring(0, type.lastIndexOf('.'));
          for (String sibling : byPackage.get(pkg)) {
            if (Pattern.compile("\\b" + sibling + "\\b").matcher(text).find()) {
              to.add(pkg + "." + sibling);
            }
          }
          to.remove(type);
          refs.put(type, to);
        });
    return refs;
  }

  private static String pkg(String type) {
    return type.substring(0, type.lastIndexOf('.'));
  }

  @Test
  void anInternalLayerUsesOnlyTheLayersBelowIt() throws IOException {
    List<String> upward = new ArrayList<>();
    references()
        .forEach(
            (from, to) -> {
              Integer rank = RANK.get(pkg(from));
              for (String t : to) {
                Integer target = RANK.get(pkg(t));
                if (rank != null && target != null && target > rank) {
                  upward.add(from + " -> " + t);
                }
              }
            });
    assertThat(upward).as("references from a lower layer to a higher one").isEmpty();
  }

  @Test
  void noTwoFilesOfDifferentPackagesReachEachOther() throws IOException {
    Map<String, Set<String>> refs = references();
    assertThat(refs).as("the core's types were read").hasSizeGreaterThan(60);
    Set<String> circles = new TreeSet<>();
    refs.forEach(
        (from, to) -> {
          for (String t : to) {
            if (!pkg(t).equals(pkg(from)) && reaches(refs, t, from)) {
              circles.add(from + " -> " + t + " -> ... -> " + from);
            }
          }
        });
    assertThat(circles).as("import circles across packages").isEmpty();
  }

  private static boolean reaches(Map<String, Set<String>> refs, String from, String to) {
    Set<String> seen = new HashSet<>();
    List<String> todo = new ArrayList<>(List.of(from));
    while (!todo.isEmpty()) {
      String at = todo.remove(todo.size() - 1);
      if (at.equals(to)) {
        return true;
      }
      for (String next : refs.getOrDefault(at, Set.of())) {
        if (seen.add(next)) {
          todo.add(next);
        }
      }
    }
    return false;
  }

  @Test
  void theReadOfTheSourcesFindsAPlantedCircle() {
    Map<String, Set<String>> refs =
        Map.of("a.X", Set.of("b.Y"), "b.Y", Set.of("b.Z"), "b.Z", Set.of("a.X"));
    assertThat(reaches(refs, "b.Y", "a.X")).isTrue();
    assertThat(reaches(Map.of("a.X", Set.of("b.Y")), "b.Y", "a.X")).isFalse();
    assertThat(COMMENTS.matcher("x /* LeaderLoop */ y // AdvisoryLock").replaceAll(" "))
        .doesNotContain("LeaderLoop", "AdvisoryLock");
  }

  static {
    if (!Files.isDirectory(MAIN)) {
      throw new UncheckedIOException(new IOException("run from retsu-lock-core: no " + MAIN));
    }
  }
}
