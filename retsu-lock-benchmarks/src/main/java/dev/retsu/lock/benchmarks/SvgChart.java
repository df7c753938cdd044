package dev.retsu.lock.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A small SVG writer for the benchmarks' distributions: one panel per scenario, one row per
 * configuration, each row a box (quartiles, median line, whiskers at min and max) with every sample
 * drawn as a dot over it, on a shared millisecond axis (logarithmic by default, since takeovers
 * range from milliseconds to seconds). Plain text out, no dependency; each row is a {@code <g
 * class="series" data-config="...">} so tests and readers can find it. Immutable inputs.
 */
final class SvgChart {

  /**
   * One configuration's samples in one panel.
   *
   * @param name the configuration
   * @param valuesMs the samples, in milliseconds (values at or below 0 are not drawn)
   */
  record Series(String name, List<Double> valuesMs) {
    Series {
      Objects.requireNonNull(name, "name");
      valuesMs = List.copyOf(valuesMs);
    }
  }

  /**
   * One scenario.
   *
   * @param title what the panel shows
   * @param series its rows, top to bottom
   */
  record Panel(String title, List<Series> series) {
    Panel {
      Objects.requireNonNull(title, "title");
      series = List.copyOf(series);
    }
  }

  private static final int WIDTH = 900;
  private static final int LABEL = 230;
  private static final int RIGHT = 110;
  private static final int ROW = 22;
  private static final int PANEL_HEAD = 26;
  private static final int AXIS = 34;

  private SvgChart() {}

  /**
   * Renders the chart.
   *
   * @param title the chart's title
   * @param axisLabel the axis's label, e.g. "fault to the new leader's first task (ms)"
   * @param panels the panels, top to bottom
   * @param log a logarithmic axis (else linear from 0)
   * @return the SVG document
   */
  static String render(String title, String axisLabel, List<Panel> panels, boolean log) {
    return render(title, axisLabel, panels, log, true);
  }

  /**
   * Renders the chart, with or without the legend of the libraries' colours (a chart of one
   * library's setups has no use for it).
   */
  static String render(
      String title, String axisLabel, List<Panel> panels, boolean log, boolean legend) {
    double lo = Double.MAX_VALUE;
    double hi = 0;
    for (Panel p : panels) {
      for (Series s : p.series()) {
        for (double v : s.valuesMs()) {
          if (v > 0) {
            lo = Math.min(lo, v);
            hi = Math.max(hi, v);
          }
        }
      }
    }
    if (hi <= 0) {
      lo = 1;
      hi = 10;
    }
    Axis axis = log ? Axis.log(lo, hi) : Axis.linear(hi);
    int rows = panels.stream().mapToInt(p -> Math.max(1, p.series().size())).sum();
    int height = 52 + panels.size() * PANEL_HEAD + rows * ROW + AXIS + 10;
    StringBuilder svg = new StringBuilder(4096);
    svg.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"")
        .append(WIDTH)
        .append("\" height=\"")
        .append(height)
        .append("\" viewBox=\"0 0 ")
        .append(WIDTH)
        .append(' ')
        .append(height)
        .append("\" font-family=\"sans-serif\" font-size=\"12\">\n")
        .append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n")
        .append("<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">")
        .append(escape(title))
        .append("</text>\n")
        .append("<text x=\"10\" y=\"40\" font-size=\"11\" fill=\"#333\">")
        .append(
            legend
                ? "colours: <tspan fill=\"#1f5fbf\">retsu-lock</tspan>, <tspan fill=\"#555555\">raw"
                    + " pg_advisory_lock waiter</tspan>, <tspan fill=\"#6a3d9a\">retsu"
                    + " adapters</tspan>, <tspan fill=\"#e08000\">ShedLock</tspan>, <tspan"
                    + " fill=\"#c0282d\">Spring Integration</tspan>; one dot per repetition"
                : "one dot per repetition")
        .append("</text>\n");
    int y = 52;
    int plotTop = y;
    for (Panel p : panels) {
      svg.append("<g class=\"panel\">\n<text x=\"10\" y=\"")
          .append(y + 17)
          .append("\" font-weight=\"bold\">")
          .append(escape(p.title()))
          .append("</text>\n");
      y += PANEL_HEAD;
      if (p.series().isEmpty()) {
        svg.append("<text x=\"").append(LABEL).append("\" y=\"").append(y + 15);
        svg.append("\" fill=\"#777\">no samples</text>\n");
        y += ROW;
      }
      for (Series s : p.series()) {
        series(svg, s, y, axis);
        y += ROW;
      }
      svg.append("</g>\n");
    }
    grid(svg, axis, plotTop, y, axisLabel);
    svg.append("</svg>\n");
    return svg.toString();
  }

  private static void series(StringBuilder svg, Series s, int y, Axis axis) {
    double[] v =
        s.valuesMs().stream()
            .mapToDouble(Double::doubleValue)
            .filter(x -> x > 0)
            .sorted()
            .toArray();
    int mid = y + ROW / 2;
    svg.append("<g class=\"series\" data-config=\"")
        .append(escape(s.name()))
        .append("\" data-n=\"")
        .append(v.length)
        .append("\">\n<text x=\"")
        .append(LABEL - 8)
        .append("\" y=\"")
        .append(mid + 4)
        .append("\" text-anchor=\"end\">")
        .append(escape(s.name()))
        .append("</text>\n");
    String color = color(s.name());
    if (v.length > 0) {
      double q1 = quantile(v, 0.25);
      double med = quantile(v, 0.5);
      double q3 = quantile(v, 0.75);
      svg.append(line(axis.x(v[0]), mid, axis.x(v[v.length - 1]), mid, color, 1));
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\""
                  + " fill-opacity=\"0.25\" stroke=\"%s\"/>%n",
              axis.x(q1),
              mid - 7,
              Math.max(1, axis.x(q3) - axis.x(q1)),
              14,
              color,
              color));
      svg.append(line(axis.x(med), mid - 8, axis.x(med), mid + 8, color, 2.5));
      for (int i = 0; i < v.length; i++) {
        // a small vertical spread so repeated values stay visible
        double jitter = ((i * 7) % 9 - 4) * 1.2;
        svg.append(
            String.format(
                Locale.ROOT,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"%s\" fill-opacity=\"0.7\"/>%n",
                axis.x(v[i]),
                mid + jitter,
                color));
      }
      svg.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%d\" y=\"%d\" fill=\"#333\">median %s ms</text>%n",
              WIDTH - RIGHT + 6,
              mid + 4,
              number(med)));
    } else {
      svg.append("<text x=\"").append(LABEL).append("\" y=\"").append(mid + 4);
      svg.append("\" fill=\"#777\">no takeover measured</text>\n");
    }
    svg.append("</g>\n");
  }

  private static void grid(StringBuilder svg, Axis axis, int top, int bottom, String label) {
    svg.append("<g class=\"axis\" stroke=\"#ccc\">\n");
    for (double t : axis.ticks()) {
      double x = axis.x(t);
      svg.append(line(x, top, x, bottom, "#ddd", 1));
    }
    svg.append("</g>\n<g class=\"axis-labels\" fill=\"#333\" text-anchor=\"middle\">\n");
    for (double t : axis.ticks()) {
      svg.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\">%s</text>%n",
              axis.x(t),
              bottom + 14,
              t >= 1 && t == Math.rint(t) ? String.format(Locale.ROOT, "%,.0f", t) : number(t)));
    }
    svg.append(
        String.format(
            Locale.ROOT,
            "<text x=\"%d\" y=\"%d\">%s</text>%n</g>%n",
            (LABEL + WIDTH - RIGHT) / 2,
            bottom + 30,
            escape(label)));
  }

  private static String line(double x1, double y1, double x2, double y2, String color, double w) {
    return String.format(
        Locale.ROOT,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>%n",
        x1,
        y1,
        x2,
        y2,
        color,
        w);
  }

  /** retsu in blue, the raw waiter in grey, the peers in orange and red. */
  static String color(String config) {
    if (config.startsWith("raw")) {
      return "#555555";
    }
    if (config.startsWith("retsu-shedlock") || config.startsWith("retsu-spring")) {
      return "#6a3d9a";
    }
    if (config.startsWith("retsu") || config.contains("member")) {
      return "#1f5fbf";
    }
    if (config.startsWith("shedlock")) {
      return "#e08000";
    }
    if (config.startsWith("spring")) {
      return "#c0282d";
    }
    return "#2a8a3a";
  }

  /**
   * The failover chart from {@code failover.csv} lines (one or several runs, in order): one panel
   * per scenario, one series per config in the order they first appear, the gaps of the MOVED
   * repetitions.
   *
   * @param csvLines the files' lines, headers included
   * @param title the chart's title
   * @return the SVG document
   */
  static String failoverFromCsv(List<String> csvLines, String title) {
    java.util.Map<String, java.util.Map<String, List<Double>>> byScenario =
        new java.util.LinkedHashMap<>();
    for (FailoverBenchmark.Scenario sc : FailoverBenchmark.Scenario.values()) {
      byScenario.put(sc.name(), new java.util.LinkedHashMap<>());
    }
    for (String line : csvLines) {
      String[] f = line.split(",");
      if (f.length < 5 || f[0].equals("config") || !byScenario.containsKey(f[1])) {
        continue;
      }
      List<Double> values = byScenario.get(f[1]).computeIfAbsent(f[0], k -> new ArrayList<>());
      if (f[3].equals("MOVED")) {
        values.add(Double.parseDouble(f[4]));
      }
    }
    List<Panel> panels = new ArrayList<>();
    for (FailoverBenchmark.Scenario sc : FailoverBenchmark.Scenario.values()) {
      java.util.Map<String, List<Double>> m = byScenario.get(sc.name());
      if (!m.isEmpty()) {
        List<Series> series = new ArrayList<>();
        m.forEach((config, values) -> series.add(new Series(config, values)));
        panels.add(new Panel(sc.title, series));
      }
    }
    return render(
        title,
        "fault to the new leader's first task, ms (log scale); box: quartiles, bar: median",
        panels,
        true);
  }

  static double quantile(double[] sorted, double q) {
    if (sorted.length == 1) {
      return sorted[0];
    }
    double pos = q * (sorted.length - 1);
    int i = (int) Math.floor(pos);
    int j = Math.min(sorted.length - 1, i + 1);
    return sorted[i] + (sorted[j] - sorted[i]) * (pos - i);
  }

  private static String number(double ms) {
    if (ms >= 100) {
      return String.format(Locale.ROOT, "%,.0f", ms);
    }
    if (ms >= 1) {
      return String.format(Locale.ROOT, "%.1f", ms);
    }
    return String.format(Locale.ROOT, "%.2f", ms);
  }

  static String escape(String text) {
    StringBuilder b = new StringBuilder(text.length());
    for (char c : text.toCharArray()) {
      switch (c) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        default -> b.append(c);
      }
    }
    return b.toString();
  }

  /** Milliseconds to x pixels. */
  private record Axis(boolean log, double lo, double hi) {

    static Axis log(double min, double max) {
      // bounds on the 1-3-10 steps, as close around the samples as they go
      double lo = Math.pow(10, Math.floor(Math.log10(min)));
      if (lo * 3 <= min) {
        lo *= 3;
      }
      double hi = Math.pow(10, Math.ceil(Math.log10(max)));
      if (hi * 0.3 >= max) {
        hi *= 0.3;
      }
      if (hi <= lo) {
        hi = lo * 10;
      }
      return new Axis(true, lo, hi);
    }

    static Axis linear(double max) {
      double step = Math.pow(10, Math.floor(Math.log10(max)));
      return new Axis(false, 0, Math.ceil(max / step) * step);
    }

    double x(double ms) {
      double f =
          log
              ? (Math.log10(Math.max(ms, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))
              : ms / hi;
      return LABEL + f * (WIDTH - LABEL - RIGHT);
    }

    List<Double> ticks() {
      List<Double> t = new ArrayList<>();
      if (log) {
        for (double d = Math.pow(10, Math.floor(Math.log10(lo))); d <= hi * 1.0001; d *= 10) {
          for (double tick : new double[] {d, d * 3}) {
            if (tick >= lo * 0.9999 && tick <= hi * 1.0001) {
              t.add(tick);
            }
          }
        }
      } else {
        double step = Math.pow(10, Math.floor(Math.log10(hi)));
        if (hi / step < 4) {
          step /= 2;
        }
        for (double d = 0; d <= hi * 1.0001; d += step) {
          t.add(d);
        }
      }
      return List.copyOf(Arrays.asList(t.toArray(Double[]::new)));
    }
  }
}
