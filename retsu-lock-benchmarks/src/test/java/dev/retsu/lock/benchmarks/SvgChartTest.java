package dev.retsu.lock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class SvgChartTest {

  @Test
  void aChartIsWellFormedSvgWithOneSeriesPerConfigInEachPanel() throws Exception {
    List<SvgChart.Panel> panels =
        List.of(
            new SvgChart.Panel(
                "graceful close (SIGTERM)",
                List.of(
                    new SvgChart.Series("retsu-wait-1s", List.of(11.2, 9.8, 12.5, 10.1)),
                    new SvgChart.Series("raw-waiter-1s", List.of(5.1, 4.9, 6.3)),
                    new SvgChart.Series("shedlock-1s & <co>", List.of(812.0)))),
            new SvgChart.Panel(
                "kill -9 of the leader",
                List.of(
                    new SvgChart.Series("retsu-wait-1s", List.of(13.0)),
                    new SvgChart.Series("raw-waiter-1s", List.of()))));

    String svg = SvgChart.render("Takeover \"now\"", "ms", panels, true);

    Document doc = parse(svg);
    assertThat(doc.getDocumentElement().getTagName()).isEqualTo("svg");
    List<String> series = new ArrayList<>();
    NodeList groups = doc.getElementsByTagName("g");
    for (int i = 0; i < groups.getLength(); i++) {
      Element g = (Element) groups.item(i);
      if (g.getAttribute("class").equals("series")) {
        series.add(g.getAttribute("data-config") + "/" + g.getAttribute("data-n"));
      }
    }
    assertThat(series)
        .containsExactly(
            "retsu-wait-1s/4",
            "raw-waiter-1s/3",
            "shedlock-1s & <co>/1",
            "retsu-wait-1s/1",
            "raw-waiter-1s/0");
    // every sample is a dot
    assertThat(doc.getElementsByTagName("circle").getLength()).isEqualTo(9);
  }

  @Test
  void aLinearChartWithoutSamplesIsStillWellFormed() throws Exception {
    String svg =
        SvgChart.render(
            "empty", "ms", List.of(new SvgChart.Panel("nothing moved", List.of())), false);

    assertThat(parse(svg).getElementsByTagName("circle").getLength()).isZero();
  }

  @Test
  void theFailoverChartOfSeveralRunsHasOneSeriesPerConfigAndScenarioInTheirOrder()
      throws Exception {
    List<String> csv =
        List.of(
            "config,scenario,rep,outcome,gap_ms,token_ms,acquire_ms,overlap_ms,claim_ms,note",
            "retsu-wait-1s,CLOSE,1,MOVED,11.000,9.000,10.000,0.000,0.000,x",
            "raw-waiter-1s,CLOSE,1,MOVED,5.000,5.000,5.000,0.000,0.000,x",
            "retsu-wait-1s,CLOSE,2,MOVED,12.000,9.000,10.000,0.000,0.000,x",
            "config,scenario,rep,outcome,gap_ms,token_ms,acquire_ms,overlap_ms,claim_ms,note",
            "spring-1s,PAUSE,1,MOVED,2800.000,-0.001,2800.000,3000.000,-0.001,x",
            "shedlock-1s,PAUSE,1,TIMEOUT,-0.001,-0.001,-0.001,0.000,-0.001,x");

    Document doc = parse(SvgChart.failoverFromCsv(csv, "two runs"));

    List<String> series = new ArrayList<>();
    NodeList groups = doc.getElementsByTagName("g");
    for (int i = 0; i < groups.getLength(); i++) {
      Element g = (Element) groups.item(i);
      if (g.getAttribute("class").equals("series")) {
        series.add(g.getAttribute("data-config") + "/" + g.getAttribute("data-n"));
      }
    }
    assertThat(series)
        .containsExactly("retsu-wait-1s/2", "raw-waiter-1s/1", "spring-1s/1", "shedlock-1s/0");
  }

  @Test
  void quantilesInterpolateBetweenSortedSamples() {
    double[] v = {1, 2, 3, 4};
    assertThat(SvgChart.quantile(v, 0.5)).isEqualTo(2.5);
    assertThat(SvgChart.quantile(v, 0.25)).isEqualTo(1.75);
    assertThat(SvgChart.quantile(new double[] {7}, 0.75)).isEqualTo(7);
  }

  private static Document parse(String svg) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setNamespaceAware(true);
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return f.newDocumentBuilder()
        .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
  }
}
