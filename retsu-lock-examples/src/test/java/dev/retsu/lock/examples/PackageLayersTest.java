package dev.retsu.lock.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * The examples' packages form layers, so that each one reads on its own: the programs people copy
 * ({@code quickstart}, {@code collector}, {@code group}, {@code boot}) never reach into the jar's
 * plumbing, and the jar's entry point ({@code app}: {@code Main} and its commands) is imported by
 * no other package. A cycle (once {@code Main} and the demo and load commands imported each other)
 * fails here, naming it.
 */
class PackageLayersTest {

  private static final Path SOURCES = Path.of("src/main/java/dev/retsu/lock/examples");

  /** A reference to another examples package: an import, or a fully qualified name in the code. */
  private static final Pattern REFERENCE =
      Pattern.compile("\\bdev\\.retsu\\.lock\\.examples\\.([a-z]+)\\.[A-Z]");

  @Test
  void thePackagesFormLayersWithTheEntryPointOnTop() {
    Map<String, Set<String>> uses = packageGraph();
    assertThat(uses).containsKeys("app", "collector", "quickstart", "http", "load");
    List<String> cycle = findCycle(uses);
    assertThat(cycle).as("a cycle between the examples' packages").isEmpty();
    uses.forEach(
        (from, to) ->
            assertThat(to).as("%s imports the jar's entry point", from).doesNotContain("app"));
    for (String copied : List.of("quickstart", "collector", "group", "boot")) {
      assertThat(uses.getOrDefault(copied, Set.of()))
          .as("%s, a program people copy, uses the jar's plumbing", copied)
          .doesNotContain("app", "http", "load");
    }
  }

  private static Map<String, Set<String>> packageGraph() {
    Map<String, Set<String>> uses = new TreeMap<>();
    try (Stream<Path> files = Files.walk(SOURCES)) {
      files
          .filter(p -> p.toString().endsWith(".java"))
          .forEach(
              p -> {
                String from = SOURCES.relativize(p).getName(0).toString();
                Set<String> to = uses.computeIfAbsent(from, k -> new TreeSet<>());
                Matcher m = REFERENCE.matcher(read(p));
                while (m.find()) {
                  if (!m.group(1).equals(from)) {
                    to.add(m.group(1));
                  }
                }
              });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return uses;
  }

  /** Depth-first search; returns the packages of the first cycle found, or an empty list. */
  private static List<String> findCycle(Map<String, Set<String>> uses) {
    Set<String> done = new TreeSet<>();
    for (String start : uses.keySet()) {
      List<String> path = new ArrayList<>();
      List<String> cycle = visit(start, uses, path, done);
      if (!cycle.isEmpty()) {
        return cycle;
      }
    }
    return List.of();
  }

  private static List<String> visit(
      String at, Map<String, Set<String>> uses, List<String> path, Set<String> done) {
    int seen = path.indexOf(at);
    if (seen >= 0) {
      List<String> cycle = new ArrayList<>(path.subList(seen, path.size()));
      cycle.add(at);
      return cycle;
    }
    if (done.contains(at)) {
      return List.of();
    }
    path.add(at);
    for (String next : uses.getOrDefault(at, Set.of())) {
      List<String> cycle = visit(next, uses, path, done);
      if (!cycle.isEmpty()) {
        return cycle;
      }
    }
    path.remove(path.size() - 1);
    done.add(at);
    return List.of();
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
