package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The snippet check on made-up pages and sources: what it accepts, and each way a block can fail to
 * be what a reader can paste.
 */
class ReadmeSnippetsTest {

  private static final String SOURCE =
      """
      package demo;

      import static java.util.Objects.requireNonNull;

      import java.time.Duration;
      import java.util.ArrayList;
      import java.util.List;
      import javax.sql.DataSource;

      class Snippets {
        record Pair(int a, int b) {}

        void first(DataSource dataSource, String given) {
          // snippet:t/first
          List<Duration> waits = new ArrayList<>();
          waits.add(Duration.ofSeconds(1));
          requireNonNull(dataSource);
          // end-snippet
          // snippet:t/second
          waits.add(Duration.ofSeconds(2)); // waits comes from the block before
          Pair p = new Pair(1, 2);
          // end-snippet
          // snippet:t/free
          System.out.println(given.length());
          // end-snippet
        }

        private int held;

        void third() {
          // snippet:t/field
          held = 1;
          // end-snippet
          // snippet:t/holder
          class Holder {
            private int count;

            void add() {
              count++;
            }
          }
          // end-snippet
          new Holder().add();
        }
      }
      """;

  private static final String FIRST =
      """
      import static java.util.Objects.requireNonNull;

      import java.time.Duration;
      import java.util.ArrayList;
      import java.util.List;

      List<Duration> waits = new ArrayList<>();
      waits.add(Duration.ofSeconds(1));
      requireNonNull(dataSource);
      """;

  private static final String SECOND =
      """
      import java.time.Duration;

      waits.add(Duration.ofSeconds(2)); // waits comes from the block before
      Pair p = new Pair(1, 2);
      """;

  @TempDir Path dir;

  @Test
  void aBlockWithExactlyItsImportsAndItsGivensPasses() throws IOException {
    Path page = page(block("t/first", FIRST) + block("t/second", SECOND));
    assertThat(ReadmeSnippets.verify(page, "t", source())).containsExactly("t/first", "t/second");
    assertThat(ReadmeSnippets.verifyPages(dir, "t", source()))
        .containsExactly("t/first", "t/second");
  }

  @Test
  void aMissingImportFailsNamingIt() throws IOException {
    Path page = page(block("t/first", FIRST.replace("import java.util.List;\n", "")));
    assertThatThrownBy(() -> ReadmeSnippets.verify(page, "t", source()))
        .hasMessageContaining("snippet t/first")
        .hasMessageContaining("missing [import java.util.List;]");
  }

  @Test
  void aMissingStaticImportFailsNamingIt() throws IOException {
    Path page =
        page(
            block("t/first", FIRST.replace("import static java.util.Objects.requireNonNull;", "")));
    assertThatThrownBy(() -> ReadmeSnippets.verify(page, "t", source()))
        .hasMessageContaining("missing [import static java.util.Objects.requireNonNull;]");
  }

  @Test
  void anImportTheCodeDoesNotNeedFails() throws IOException {
    Path page = page(block("t/first", "import java.util.Map;\n" + FIRST));
    assertThatThrownBy(() -> ReadmeSnippets.verify(page, "t", source()))
        .hasMessageContaining("not needed [import java.util.Map;]");
  }

  @Test
  void anOnDemandImportCoversItsPackage() throws IOException {
    String onDemand =
        FIRST.replace(
            "import java.util.ArrayList;\nimport java.util.List;\n", "import java.util.*;\n");
    assertThat(ReadmeSnippets.verify(page(block("t/first", onDemand)), "t", source()))
        .containsExactly("t/first");
  }

  @Test
  void aVariableNeitherDeclaredNorGivenFails() throws IOException {
    Path page = page(block("t/free", "System.out.println(given.length());\n"));
    assertThatThrownBy(() -> ReadmeSnippets.verify(page, "t", source()))
        .hasMessageContaining("uses [given] without declaring them");
    Path alone = page(block("t/second", SECOND));
    assertThatThrownBy(() -> ReadmeSnippets.verify(alone, "t", source()))
        .as("waits is declared by a block that is not on this page")
        .hasMessageContaining("uses [waits] without declaring them");
  }

  @Test
  void aFieldOfTheSurroundingCodeFailsUnlessTheBlockDeclaresIt() throws IOException {
    Path page = page(block("t/field", "held = 1;\n"));
    assertThatThrownBy(() -> ReadmeSnippets.verify(page, "t", source()))
        .as("held is a field of the class around the region, which the page does not show")
        .hasMessageContaining("uses [held] without declaring them");
    String holder =
        "class Holder {\n  private int count;\n\n  void add() {\n    count++;\n  }\n}\n";
    assertThat(ReadmeSnippets.verify(page(block("t/holder", holder)), "t", source()))
        .containsExactly("t/holder");
  }

  @Test
  void codeThatDiffersFromTheRegionFailsAndWhiteSpaceDoesNot() throws IOException {
    String reflowed =
        FIRST.replace(
            "waits.add(Duration.ofSeconds(1));", "waits.add(\n    Duration.ofSeconds(1));");
    assertThat(ReadmeSnippets.verify(page(block("t/first", reflowed)), "t", source()))
        .containsExactly("t/first");
    Path changed = page(block("t/first", FIRST.replace("ofSeconds(1)", "ofSeconds(9)")));
    assertThatThrownBy(() -> ReadmeSnippets.verify(changed, "t", source()))
        .hasMessageContaining("differs from the tested code");
    Path missing = page(block("t/none", "int x = 1;\n"));
    assertThatThrownBy(() -> ReadmeSnippets.verify(missing, "t", source()))
        .hasMessageContaining("has no '// snippet:t/none' region");
  }

  @Test
  void javaBlocksWithoutAMarkerAreCountedAndTargetAndHiddenDirectoriesAreNoPages()
      throws IOException {
    Path page = page(block("t/first", FIRST) + "```java\nint x = 1;\n```\n");
    assertThat(ReadmeSnippets.unmarkedJavaBlocks(page)).isEqualTo(1);
    assertThat(ReadmeSnippets.modules(page)).containsExactly("t");
    Files.createDirectories(dir.resolve("m/target"));
    Files.writeString(dir.resolve("m/target/built.md"), "```java\nx();\n```\n");
    Files.createDirectories(dir.resolve(".git"));
    Files.writeString(dir.resolve(".git/notes.md"), "");
    Files.writeString(dir.resolve("m/README.md"), "");
    assertThat(ReadmeSnippets.pages(dir)).containsExactly(dir.resolve("m/README.md"), page);
  }

  private Path source() throws IOException {
    Path p = dir.resolve("src/demo/Snippets.java");
    Files.createDirectories(p.getParent());
    Files.writeString(p, SOURCE);
    return p;
  }

  private Path page(String text) throws IOException {
    Path p = dir.resolve("page.md");
    Files.writeString(p, text);
    return p;
  }

  private static String block(String name, String code) {
    return "<!-- snippet:" + name + " -->\n```java\n" + code + "```\n\n";
  }
}
