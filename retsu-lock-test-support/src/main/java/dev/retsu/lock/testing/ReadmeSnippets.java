package dev.retsu.lock.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Keeps the Java blocks of the README and every other page ({@code docs/*.md}, module READMEs)
 * honest: what a reader pastes is code that compiles and runs in the build.
 *
 * <p>A page's block preceded by {@code <!-- snippet:module/name -->} has two parts: the imports it
 * needs ({@code import ...;} lines first, then a blank line), and the code, which must equal
 * (ignoring white space, so formatting may differ) the code between {@code // snippet:module/name}
 * and {@code // end-snippet} in a source of that module, where it compiles and runs. javac
 * attributes that source, and the check then insists that:
 *
 * <ul>
 *   <li>the block imports exactly the types the code names (java.lang, the source's own classes,
 *       member types of an enclosing class and classes that another block shows whole aside), and
 *       the static members it reaches through a static import: a reader who pastes the block has
 *       every import it needs, and none it does not;
 *   <li>every local variable and every field the code uses by its simple name is declared in it (a
 *       field, by showing its whole class), in an earlier block of the same module on the same
 *       page, or is one of the {@link #GIVENS} that the pages introduce ({@code dataSource}, your
 *       {@code javax.sql.DataSource}).
 * </ul>
 *
 * <p>A Java block without a marker fails {@link #unmarkedJavaBlocks(Path)}, so nothing a page shows
 * escapes the build.
 */
public final class ReadmeSnippets {

  /**
   * Local variables a block may use without declaring them: what the pages introduce as given.
   * {@code dataSource} is the reader's {@code javax.sql.DataSource}, {@code registry} their
   * Micrometer {@code MeterRegistry}.
   */
  public static final Set<String> GIVENS = Set.of("dataSource", "registry");

  private static final Pattern BLOCK =
      Pattern.compile(
          "<!-- snippet:([a-z0-9-]+/[a-z0-9-]+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

  private static final Pattern IMPORT =
      Pattern.compile("import (static )?([A-Za-z_][\\w.]*(?:\\.\\*)?);");

  private ReadmeSnippets() {}

  /**
   * Returns the pages the checks read: every {@code *.md} file under the root, outside build output
   * ({@code target/}) and hidden directories, in a stable order.
   *
   * @param root the repository root, e.g. {@code Path.of("..")} from a module
   * @return the pages
   */
  public static List<Path> pages(Path root) {
    return files(root, ".md");
  }

  /**
   * Returns the regular files under the root whose names end with {@code suffix}, in a stable
   * order, without descending into build output ({@code target/}) or hidden directories: a build
   * running meanwhile (surefire rewriting its reports) deletes files there, which would fail a
   * plain walk.
   *
   * @param root the repository root, e.g. {@code Path.of("..")} from a module
   * @param suffix the end of the file names, e.g. {@code .java}
   * @return the files
   */
  public static List<Path> files(Path root, String suffix) {
    List<Path> found = new ArrayList<>();
    try {
      Files.walkFileTree(
          root,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
              return dir.equals(root) || !excluded(dir.getFileName().toString())
                  ? FileVisitResult.CONTINUE
                  : FileVisitResult.SKIP_SUBTREE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
              if (attrs.isRegularFile() && file.getFileName().toString().endsWith(suffix)) {
                found.add(file);
              }
              return FileVisitResult.CONTINUE;
            }
          });
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list the " + suffix + " files under " + root, e);
    }
    Collections.sort(found);
    return found;
  }

  private static boolean excluded(String directory) {
    return directory.equals("target") || directory.startsWith(".");
  }

  /**
   * Returns the snippets of one module on one page.
   *
   * @param page the page
   * @param module the module prefix, e.g. {@code core}
   * @return snippet name to the block as the page shows it (imports and code), in page order
   */
  public static Map<String, String> readmeSnippets(Path page, String module) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Block b : blocks(page)) {
      if (b.name.startsWith(module + "/")) {
        out.put(b.name, b.text);
      }
    }
    return out;
  }

  /**
   * Checks every snippet of a module on one page against the given sources.
   *
   * @param page the page, e.g. {@code ../docs/spring-boot.md}
   * @param module the module prefix, e.g. {@code boot}
   * @param sources sources that hold the snippet regions
   * @return the names checked, in page order
   * @throws AssertionError naming the first snippet that is missing, differs, lacks an import,
   *     shows one it does not need, or uses a variable it does not declare
   */
  public static List<String> verify(Path page, String module, Path... sources) {
    return check(List.of(page), module, sources);
  }

  /**
   * Checks every snippet of a module on every page under the root (see {@link #pages(Path)})
   * against the given sources, as {@link #verify(Path, String, Path...)} does for one page.
   *
   * @param root the repository root
   * @param module the module prefix, e.g. {@code core}
   * @param sources sources that hold the snippet regions
   * @return the names checked, by page then page order
   * @throws AssertionError naming the first snippet that fails, and its page
   */
  public static List<String> verifyPages(Path root, String module, Path... sources) {
    return check(pages(root), module, sources);
  }

  private static List<String> check(List<Path> pages, String module, Path... sources) {
    Map<String, SnippetSource.Region> regions = new HashMap<>();
    Map<String, Path> regionFile = new HashMap<>();
    // whole classes the blocks show: a reader pastes them into one package, so a block that uses
    // another needs no import of it (the sources may keep them in packages of their own)
    Set<String> shownTypes = new TreeSet<>();
    List<String> checked = new ArrayList<>();
    boolean attributed = false;
    for (Path page : pages) {
      Set<String> declaredEarlier = new TreeSet<>();
      for (Block b : blocks(page)) {
        if (!b.name.startsWith(module + "/")) {
          continue;
        }
        if (!attributed) {
          for (Path source : sources) {
            SnippetSource s = SnippetSource.of(source);
            s.regions().keySet().forEach(n -> regionFile.put(n, s.path()));
            regions.putAll(s.regions());
          }
          regions.values().forEach(r -> shownTypes.addAll(r.declaredTypes()));
          attributed = true;
        }
        String where = "snippet " + b.name + " on " + page;
        SnippetSource.Region region = regions.get(b.name);
        if (region == null) {
          throw new AssertionError(where + " has no '// snippet:" + b.name + "' region");
        }
        if (!normalize(b.code).equals(normalize(region.code()))) {
          throw new AssertionError(
              where
                  + " differs from the tested code in "
                  + regionFile.get(b.name)
                  + ".\n--- page ---\n"
                  + b.code.strip()
                  + "\n--- test ---\n"
                  + region.code().strip());
        }
        {
          checkImports(where, b, region, shownTypes);
          Set<String> undeclared = new TreeSet<>(region.freeVariables());
          undeclared.removeAll(GIVENS);
          undeclared.removeAll(declaredEarlier);
          if (!undeclared.isEmpty()) {
            throw new AssertionError(
                where
                    + " uses "
                    + undeclared
                    + " without declaring them; declare them in the block, in an earlier block of"
                    + " the page, or use one of "
                    + new TreeSet<>(GIVENS));
          }
        }
        declaredEarlier.addAll(region.declaredVariables());
        checked.add(b.name);
      }
    }
    return List.copyOf(checked);
  }

  private static void checkImports(
      String where, Block b, SnippetSource.Region region, Set<String> shownTypes) {
    Set<String> shown = new TreeSet<>(b.imports);
    Set<String> needed = new TreeSet<>();
    region.imports().stream().filter(t -> !shownTypes.contains(t)).forEach(needed::add);
    region.staticImports().forEach(s -> needed.add("static " + s));
    Set<String> missing = new TreeSet<>();
    for (String n : needed) {
      if (!covered(n, shown)) {
        missing.add(n);
      }
    }
    Set<String> unused = new TreeSet<>();
    for (String s : shown) {
      if (needed.stream().noneMatch(n -> covered(n, Set.of(s)))) {
        unused.add(s);
      }
    }
    if (!missing.isEmpty() || !unused.isEmpty()) {
      throw new AssertionError(
          where
              + " does not show the imports its code needs: missing "
              + missing.stream().map(n -> "import " + n + ";").collect(Collectors.toList())
              + ", not needed "
              + unused.stream().map(n -> "import " + n + ";").collect(Collectors.toList()));
    }
  }

  private static boolean covered(String needed, Set<String> shown) {
    if (shown.contains(needed)) {
      return true;
    }
    int dot = needed.lastIndexOf('.');
    return dot > 0 && shown.contains(needed.substring(0, dot) + ".*");
  }

  /**
   * Returns the number of java code blocks on a page that no snippet marker names, so that a test
   * can insist every Java example is compiled somewhere.
   *
   * @param page the page
   * @return how many java blocks lack a marker
   */
  public static int unmarkedJavaBlocks(Path page) {
    String text = read(page);
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

  /**
   * Returns the module prefix of every snippet marker on a page, so that a test can insist each
   * prefix is one that some module's test verifies.
   *
   * @param page the page
   * @return the prefixes, e.g. {@code core}, {@code examples}
   */
  public static Set<String> modules(Path page) {
    Set<String> out = new TreeSet<>();
    for (Block b : blocks(page)) {
      out.add(b.name.substring(0, b.name.indexOf('/')));
    }
    return out;
  }

  /** One marked block of a page: its imports and its code. */
  private record Block(String name, String text, List<String> imports, String code) {}

  private static List<Block> blocks(Path page) {
    String text = read(page);
    List<Block> out = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      String body = m.group(2);
      List<String> imports = new ArrayList<>();
      int codeFrom = 0;
      for (String line : body.split("\n", -1)) {
        Matcher i = IMPORT.matcher(line.strip());
        if (i.matches()) {
          imports.add((i.group(1) == null ? "" : "static ") + i.group(2));
        } else if (!line.isBlank()) {
          break;
        }
        codeFrom += line.length() + 1;
      }
      out.add(
          new Block(m.group(1), body, imports, body.substring(Math.min(codeFrom, body.length()))));
    }
    return out;
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
