package dev.retsu.lock.examples.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.FencingToken;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The README's run command, shortened: two collectors, a 1 s interval, one failover. */
class DemoIntegrationTest {

  private static final Pattern TOKENS = Pattern.compile("fencing token ([A-T0-9]+) -> ([A-T0-9]+)");

  @AfterEach
  void noCollectorOutlivesTheDemo() {
    List<ProcessHandle> left = collectors();
    left.forEach(ProcessHandle::destroyForcibly);
    assertThat(left).as("collector processes left running by the demo").isEmpty();
  }

  private static List<ProcessHandle> collectors() {
    return ProcessHandle.current()
        .descendants()
        .filter(ProcessHandle::isAlive)
        .filter(
            p ->
                p.info()
                    .commandLine()
                    .map(c -> c.contains(Main.class.getName() + " collector"))
                    .orElse(false))
        .toList();
  }

  @Test
  void quickDemoShowsOneLeaderAndMeasuresTheTakeover() {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(new Tee(captured, System.out), true, StandardCharsets.UTF_8);

    int status =
        Main.run(
            new String[] {"demo", "--quick", "--base-port", Integer.toString(twoFreePorts())},
            Map.of(),
            out,
            out);

    String text = captured.toString(StandardCharsets.UTF_8);
    assertThat(status).as(text).isZero();
    assertThat(text)
        .contains("PostgreSQL is up: jdbc:postgresql://127.0.0.1:")
        .contains("launched 2 collector JVMs")
        .containsPattern("collector-[ab] +\\| queue state metrics collector leadership acquired")
        .containsPattern("LEADER .*queue_messages_ready queue-1=\\d+")
        .containsPattern("standby .*no queue gauges")
        .containsPattern("collector-[ab] took over \\d+\\.\\d\\d s after the SIGTERM")
        .containsPattern("leader stopped with SIGTERM \\(graceful\\): +takeover +\\d+\\.\\d\\d s")
        .contains("cleaning up");
    // Progress while the collectors start, and what the numbers in the replica lines mean.
    assertThat(text)
        .containsPattern("collector-a +\\| up \\d+\\.\\d\\d s after its launch, endpoint on :\\d+")
        .containsPattern("collector-b +\\| up \\d+\\.\\d\\d s after its launch")
        .contains("term N counts the terms of that one process")
        .contains("fencing token (timeline, checkpoint, transaction id in one text that sorts like")
        .contains("pid is the PostgreSQL backend pid")
        .containsPattern("lock held by collector-[ab] \\(backend pid \\d+\\)");
    // The new leader's fencing token is greater than the old one's, though both are in term 1.
    Matcher tokens = TOKENS.matcher(text);
    assertThat(tokens.find()).as(text).isTrue();
    FencingToken before = FencingToken.parse(tokens.group(1));
    FencingToken after = FencingToken.parse(tokens.group(2));
    assertThat(after.isNewerThan(before)).as(before + " -> " + after).isTrue();
    assertThat(collectors()).isEmpty();
  }

  /** Returns a port p such that p and p + 1 were free a moment ago. */
  private static int twoFreePorts() {
    for (int attempt = 0; attempt < 50; attempt++) {
      try (ServerSocket first = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        int p = first.getLocalPort();
        if (p >= 65535) {
          continue;
        }
        try (ServerSocket second = new ServerSocket(p + 1, 1, InetAddress.getLoopbackAddress())) {
          return second.getLocalPort() - 1;
        } catch (IOException taken) {
          // try another
        }
      } catch (IOException e) {
        // try another
      }
    }
    throw new IllegalStateException("no two consecutive free ports");
  }

  /** Writes to both streams. */
  private static final class Tee extends OutputStream {
    private final OutputStream a;
    private final OutputStream b;

    Tee(OutputStream a, OutputStream b) {
      this.a = a;
      this.b = b;
    }

    @Override
    public void write(int c) throws IOException {
      a.write(c);
      b.write(c);
    }

    @Override
    public void write(byte[] bytes, int off, int len) throws IOException {
      a.write(bytes, off, len);
      b.write(bytes, off, len);
    }

    @Override
    public void flush() throws IOException {
      a.flush();
      b.flush();
    }
  }
}
