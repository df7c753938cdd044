package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.ReadmeSnippets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Rules every page (the README, docs/, module READMEs) keeps, so that a reader can follow and paste
 * what it shows: relative links reach a page and, with an anchor, one of its headings; and a Maven
 * command hides its transfer progress, so a first build prints what matters instead of a thousand
 * download lines.
 */
class DocsPagesTest {

  private static final Path ROOT = Path.of("..");

  /**
   * Pages the index links to that other work writes (the Spring Boot page, the compatibility page,
   * the contributors' internals). Remove a page from here when it lands: this test fails until
   * then.
   */
  private static final Set<String> ANNOUNCED = Set.of();

  private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

  private static final Pattern HEADING = Pattern.compile("^#{1,6} (.+)$", Pattern.MULTILINE);

  private static final Pattern FENCE = Pattern.compile("```([a-z]*)\\n(.*?)```", Pattern.DOTALL);

  @Test
  void everyRelativeLinkReachesAPageAndItsHeading() throws IOException {
    Map<Path, Set<String>> anchors = new HashMap<>();
    List<String> broken = new ArrayList<>();
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      String text = withoutCode(Files.readString(page));
      Matcher m = LINK.matcher(text);
      while (m.find()) {
        String target = m.group(1);
        if (target.matches("[a-z]+:.*")) {
          continue; // https:, mailto:
        }
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        String fromRoot =
            ROOT.toAbsolutePath()
                .normalize()
                .relativize(resolved.toAbsolutePath().normalize())
                .toString();
        if (ANNOUNCED.contains(fromRoot)) {
          continue;
        }
        if (!Files.exists(resolved)) {
          broken.add(page + ": " + target + " (no such file)");
          continue;
        }
        if (hash >= 0) {
          String anchor = target.substring(hash + 1);
          Set<String> known = anchors.computeIfAbsent(resolved, DocsPagesTest::anchorsOf);
          if (!known.contains(anchor)) {
            broken.add(page + ": " + target + " (no such heading; " + known + ")");
          }
        }
      }
    }
    assertThat(broken).as("links that lead nowhere").isEmpty();
    for (String page : ANNOUNCED) {
      assertThat(ROOT.resolve(page))
          .as("%s has landed: remove it from DocsPagesTest.ANNOUNCED", page)
          .doesNotExist();
    }
  }

  @Test
  void everyMavenCommandOnAPageHidesItsTransferProgress() throws IOException {
    // Every line that runs the wrapper, in a bash block, a plain block or inline code: a reader
    // pastes it from anywhere on the page.
    List<String> noisy = new ArrayList<>();
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      for (String line : Files.readString(page).split("\n")) {
        if (line.contains("./mvnw ") && !line.matches(".*\\s(-ntp|--no-transfer-progress)\\b.*")) {
          noisy.add(page + ": " + line.strip());
        }
      }
    }
    assertThat(noisy).as("Maven commands that would print every download: add -ntp").isEmpty();
  }

  /**
   * GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, -1 for repeats.
   */
  private static Set<String> anchorsOf(Path page) {
    Set<String> out = new TreeSet<>();
    try {
      Matcher m = HEADING.matcher(withoutCode(Files.readString(page)));
      Map<String, Integer> seen = new HashMap<>();
      while (m.find()) {
        String slug =
            m.group(1)
                .strip()
                .toLowerCase(Locale.ROOT)
                .replaceAll("[^\\p{L}\\p{N} _-]", "")
                .replace(' ', '-');
        int n = seen.merge(slug, 1, Integer::sum);
        out.add(n == 1 ? slug : slug + "-" + (n - 1));
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return out;
  }

  /** The text outside fenced blocks, where a '#' line is a comment, not a heading. */
  private static String withoutCode(String text) {
    return FENCE.matcher(text).replaceAll("");
  }

  /**
   * The two ways off ShedLock's table (keep {@code @SchedulerLock} on {@code RetsuLockProvider}, or
   * move to {@code @LeaderOnly}) each point to the other, so a reader on either page sees both.
   */
  @Test
  void theTwoShedLockRoutesLinkToEachOther() throws IOException {
    String shedlock = Files.readString(ROOT.resolve("docs/shedlock.md"));
    String boot = Files.readString(ROOT.resolve("docs/spring-boot.md"));
    String bootSection =
        boot.substring(
            boot.indexOf("## Coming from ShedLock"), boot.indexOf("## Running the tests"));
    assertThat(shedlock)
        .contains("](spring-boot.md#coming-from-shedlock-or-spring-integration-leader-election)");
    assertThat(bootSection).contains("](shedlock.md#");
  }

  /**
   * A line that builds and then runs a program ({@code ./mvnw ... && java -jar ...}) lets Maven
   * show its progress: with {@code -q} a first build is a silent minute or two before the program
   * says anything, which looks like a hang.
   */
  @Test
  void aBuildThenRunCommandShowsTheBuildsProgress() throws IOException {
    List<String> silent = new ArrayList<>();
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      for (String line : Files.readAllLines(page)) {
        if (line.contains("./mvnw ") && line.contains("&& java ") && line.matches(".* -q( .*)?")) {
          silent.add(ROOT.relativize(page) + ": " + line.strip());
        }
      }
    }
    assertThat(silent).as("build-then-run commands that silence the build with -q").isEmpty();
  }
}
