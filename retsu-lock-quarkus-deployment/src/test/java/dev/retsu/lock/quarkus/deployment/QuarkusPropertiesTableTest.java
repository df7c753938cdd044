package dev.retsu.lock.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Quarkus page's properties table (docs/quarkus.md) names exactly the properties of Quarkus's
 * generated configuration documentation for the extension (the model the extension processor writes
 * from {@code RetsuLockConfig}), with the same defaults where the model has one.
 */
class QuarkusPropertiesTableTest {

  private static final String MODEL = "META-INF/quarkus-config-doc/quarkus-config-model.json";

  @Test
  void thePropertiesTableEqualsTheGeneratedConfigDocumentation() throws IOException {
    Map<String, String> model = model();
    Map<String, String> page = page();
    assertThat(page.keySet()).as("properties on the page").isEqualTo(model.keySet());
    model.forEach(
        (name, value) -> {
          if (value != null && page.get(name) != null) {
            assertThat(page.get(name)).as("default of %s", name).isEqualToIgnoringCase(value);
          }
        });
  }

  /** Property (with {@code <name>} for the map key) to default, from the generated model. */
  private static Map<String, String> model() throws IOException {
    Enumeration<URL> all = QuarkusPropertiesTableTest.class.getClassLoader().getResources(MODEL);
    while (all.hasMoreElements()) {
      String json;
      try (InputStream in = all.nextElement().openStream()) {
        json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      if (!json.contains("\"retsu.lock.enabled\"")) {
        continue;
      }
      // one property object per chunk: its default (if any) and its path come before its
      // sourceElementName (the keys are sorted); a section is no ConfigProperty
      Map<String, String> out = new TreeMap<>();
      String[] chunks = json.split("model\\.ConfigProperty\",", -1);
      Pattern property = Pattern.compile("\"property\" : \"((?:[^\"\\\\]|\\\\.)*)\"");
      Pattern value = Pattern.compile("\"defaultValue\" : \"([^\"]*)\"");
      for (int i = 1; i < chunks.length; i++) {
        String chunk = chunks[i];
        int next = chunk.indexOf("\"sourceElementName\"");
        String own = next < 0 ? chunk : chunk.substring(0, next);
        Matcher p = property.matcher(own);
        if (!p.find()) {
          continue;
        }
        Matcher v = value.matcher(own);
        out.put(
            p.group(1)
                .replace("\\\"leader-name\\\"", "<name>")
                .replace("\\\"group-name\\\"", "<name>"),
            v.find() ? v.group(1) : null);
      }
      return out;
    }
    throw new AssertionError("no generated config documentation for retsu.lock on the class path");
  }

  /**
   * Property to default (the first backticked value of the default cell, if any), from the page.
   */
  private static Map<String, String> page() throws IOException {
    String text = Files.readString(Path.of("../docs/quarkus.md"));
    String table = text.substring(text.indexOf("\n## Properties\n"));
    table = table.substring(0, table.indexOf("\n## ", 5));
    Map<String, String> out = new TreeMap<>();
    Pattern code = Pattern.compile("`([^`]+)`");
    for (String line : table.split("\n")) {
      if (!line.startsWith("| `retsu.lock.")) {
        continue;
      }
      String[] cells = line.split("\\|");
      Matcher d = code.matcher(cells[2]);
      String def = d.find() ? d.group(1) : null;
      Matcher n = code.matcher(cells[1]);
      String last = null;
      while (n.find()) {
        String name = n.group(1);
        if (name.startsWith(".") && last != null) {
          name = last.substring(0, last.lastIndexOf('.', last.lastIndexOf('.') - 1)) + name;
        }
        out.put(name, def);
        last = name;
      }
    }
    return out;
  }
}
