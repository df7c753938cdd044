package dev.retsu.lock.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.SAXException;

/**
 * The build's promises about what is published, read from the POMs of the reactor: a module that
 * someone adds is published by default, so it must be in the BOM (a BOM that misses a module pins
 * nothing for it, and users mix versions: Resilience4j #2421). A module opts out of publishing with
 * both {@code maven.deploy.skip} and {@code skipPublishing}: the Central plugin replaces
 * maven-deploy-plugin and ignores the first.
 */
class BomCoversEveryPublishedModuleTest {

  private static final Path ROOT = Path.of("..");
  private static final String BOM = "retsu-lock-bom";

  private static Pom parent;
  private static Pom bom;
  private static List<Pom> modules;

  /** One module's POM, as far as these checks read it. */
  record Pom(Path dir, Element project) {

    String artifactId() {
      return text(project, "artifactId").orElseThrow();
    }

    String packaging() {
      return text(project, "packaging").orElse("jar");
    }

    Optional<String> version() {
      return text(project, "version")
          .or(() -> child(project, "parent").flatMap(p -> text(p, "version")));
    }

    Optional<String> property(String name) {
      return child(project, "properties").flatMap(p -> text(p, name));
    }

    boolean flag(String property) {
      return property(property).map(v -> v.trim().equals("true")).orElse(false);
    }

    boolean published() {
      return !flag("maven.deploy.skip") && !flag("skipPublishing");
    }

    /** The modules this POM aggregates, in its main build and in every profile. */
    List<String> moduleNames() {
      List<String> names = new ArrayList<>();
      child(project, "modules").ifPresent(m -> names.addAll(texts(m, "module")));
      child(project, "profiles")
          .ifPresent(
              ps ->
                  children(ps, "profile")
                      .forEach(
                          p ->
                              child(p, "modules")
                                  .ifPresent(m -> names.addAll(texts(m, "module")))));
      return names;
    }

    /** The plugin's version in pluginManagement or plugins, main build or profiles. */
    List<Element> plugins(String artifactId) {
      List<Element> found = new ArrayList<>();
      collectPlugins(project, artifactId, found);
      return found;
    }
  }

  @BeforeAll
  static void readTheReactor() throws Exception {
    parent = read(ROOT);
    assertThat(parent.artifactId())
        .as("the reactor root at %s", ROOT.toAbsolutePath())
        .isEqualTo("retsu-lock-parent");
    modules = new ArrayList<>();
    collectModules(parent, modules);
    bom =
        modules.stream()
            .filter(m -> m.artifactId().equals(BOM))
            .findFirst()
            .orElseThrow(() -> new AssertionError(BOM + " is not a module of the reactor"));
  }

  @Test
  void bomListsEveryPublishedModuleAndNothingElse() {
    Set<String> published =
        modules.stream()
            .filter(Pom::published)
            .filter(m -> !m.packaging().equals("pom"))
            .map(Pom::artifactId)
            .collect(Collectors.toCollection(TreeSet::new));
    Map<String, String> listed = new LinkedHashMap<>();
    Element managed =
        child(child(bom.project(), "dependencyManagement").orElseThrow(), "dependencies")
            .orElseThrow();
    for (Element d : children(managed, "dependency")) {
      listed.put(text(d, "artifactId").orElseThrow(), text(d, "version").orElse(""));
    }

    assertThat(published).as("published modules of the reactor").isNotEmpty();
    assertThat(listed.keySet())
        .as(
            "the modules %s manages; every published jar module of the reactor must be listed, and"
                + " nothing else (a module that is not published opts out with maven.deploy.skip"
                + " and skipPublishing)",
            BOM)
        .containsExactlyInAnyOrderElementsOf(published);
    assertThat(listed)
        .as("every module in %s at the reactor's version", BOM)
        .allSatisfy((artifact, version) -> assertThat(version).isEqualTo("${project.version}"));
  }

  @Test
  void everyModuleThatSkipsDeploySkipsCentralToo() {
    for (Pom m : modules) {
      assertThat(m.flag("maven.deploy.skip"))
          .as(
              "%s: maven.deploy.skip and skipPublishing must agree (the Central plugin reads only"
                  + " skipPublishing, maven-deploy-plugin and CycloneDX only maven.deploy.skip)",
              m.artifactId())
          .isEqualTo(m.flag("skipPublishing"));
      for (Element plugin : m.plugins("maven-deploy-plugin")) {
        assertThat(child(plugin, "configuration").flatMap(c -> text(c, "skip")))
            .as(
                "%s configures maven-deploy-plugin's skip, which the Central plugin ignores: set"
                    + " the properties maven.deploy.skip and skipPublishing instead",
                m.artifactId())
            .isEmpty();
      }
    }
  }

  @Test
  void everyPublishedModuleHasTheMetadataCentralRequires() {
    assertThat(parent.published()).isTrue();
    for (Pom m : modules) {
      if (!m.published()) {
        continue;
      }
      // url, licenses, developers and scm come from the parent (the BOM has its own copies)
      Pom source = m.artifactId().equals(BOM) ? bom : parent;
      for (String element : List.of("url", "licenses", "developers", "scm")) {
        assertThat(child(source.project(), element))
            .as("%s <%s>", m.artifactId(), element)
            .isPresent();
      }
      assertThat(text(m.project(), "name")).as("%s <name>", m.artifactId()).isPresent();
      assertThat(text(m.project(), "description"))
          .as("%s <description>", m.artifactId())
          .isPresent();
    }
  }

  @Test
  void bomRepeatsTheParentsVersionTimestampAndReleasePlugins() {
    assertThat(bom.version()).isEqualTo(parent.version());
    assertThat(bom.property("project.build.outputTimestamp"))
        .isEqualTo(parent.property("project.build.outputTimestamp"));
    assertThat(pluginVersions(bom, "maven-gpg-plugin"))
        .containsOnly(parent.property("gpg-plugin.version").orElseThrow());
    assertThat(pluginVersions(bom, "central-publishing-maven-plugin"))
        .containsOnly(parent.property("central-publishing-plugin.version").orElseThrow());
  }

  private static Set<String> pluginVersions(Pom pom, String artifactId) {
    Set<String> versions = new TreeSet<>();
    for (Element p : pom.plugins(artifactId)) {
      text(p, "version").ifPresent(versions::add);
    }
    assertThat(versions).as("%s pins %s", pom.artifactId(), artifactId).isNotEmpty();
    return versions;
  }

  private static void collectModules(Pom aggregator, List<Pom> into) throws Exception {
    for (String name : aggregator.moduleNames()) {
      Pom m = read(aggregator.dir().resolve(name));
      into.add(m);
      collectModules(m, into);
    }
  }

  private static Pom read(Path dir) throws IOException, SAXException, ParserConfigurationException {
    Path file = Files.isDirectory(dir) ? dir.resolve("pom.xml") : dir;
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Element project = f.newDocumentBuilder().parse(file.toFile()).getDocumentElement();
    return new Pom(file.getParent(), project);
  }

  private static void collectPlugins(Element e, String artifactId, List<Element> into) {
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c) {
        if (c.getTagName().equals("plugin")
            && text(c, "artifactId").orElse("").equals(artifactId)) {
          into.add(c);
        } else if (!c.getTagName().equals("dependencies")) {
          collectPlugins(c, artifactId, into);
        }
      }
    }
  }

  private static Optional<Element> child(Element e, String name) {
    return children(e, name).stream().findFirst();
  }

  private static List<Element> children(Element e, String name) {
    List<Element> found = new ArrayList<>();
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c && c.getTagName().equals(name)) {
        found.add(c);
      }
    }
    return found;
  }

  private static Optional<String> text(Element e, String name) {
    return child(e, name).map(c -> c.getTextContent().trim()).filter(t -> !t.isEmpty());
  }

  private static List<String> texts(Element e, String name) {
    return children(e, name).stream().map(c -> c.getTextContent().trim()).toList();
  }
}
