package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every Maven dependency snippet of a page that names one of our artifacts is followed (the next
 * block, prose between them allowed) by its Gradle (Kotlin DSL) twin with the same coordinates:
 * {@code "group:artifact:version"}, {@code platform(...)} for the BOM, no version where the BOM
 * gives it. No database.
 */
class DocsGradleCoordinatesTest {

  private static final Path ROOT = Path.of("..");
  private static final Pattern XML_BLOCK = Pattern.compile("```xml\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern NEXT_BLOCK = Pattern.compile("```(\\w*)\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern DEPENDENCY =
      Pattern.compile("<dependency>(.*?)</dependency>", Pattern.DOTALL);

  @Test
  void everyMavenDependencySnippetHasItsGradleKotlinTwin() throws IOException {
    List<String> missing = new ArrayList<>();
    int checked = 0;
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      String text = Files.readString(page);
      Matcher block = XML_BLOCK.matcher(text);
      while (block.find()) {
        Matcher next = NEXT_BLOCK.matcher(text);
        String gradle =
            next.find(block.end()) && "kotlin".equals(next.group(1)) ? next.group(2) : "";
        Matcher dependency = DEPENDENCY.matcher(block.group(1));
        while (dependency.find()) {
          String d = dependency.group(1);
          String group = tag(d, "groupId");
          if (!"dev.retsu".equals(group)) {
            continue;
          }
          String coordinates = group + ":" + tag(d, "artifactId");
          String version = tag(d, "version");
          String expected = "\"" + coordinates + (version.isEmpty() ? "" : ":" + version) + "\"";
          if ("import".equals(tag(d, "scope"))) {
            expected = "platform(" + expected + ")";
          }
          checked++;
          if (!gradle.contains(expected)) {
            missing.add(ROOT.relativize(page) + ": " + expected);
          }
        }
      }
    }
    assertThat(missing)
        .as("Maven dependencies without the same coordinates in a kotlin block right after")
        .isEmpty();
    assertThat(checked).as("dependency snippets checked").isGreaterThanOrEqualTo(5);
  }

  private static String tag(String xml, String name) {
    Matcher m = Pattern.compile("<" + name + ">([^<]*)</" + name + ">").matcher(xml);
    return m.find() ? m.group(1).strip() : "";
  }
}
