package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.TakeoverMode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A WAIT standby in its own JVM for {@link TakeoverLinkingIntegrationTest}: it prints {@code MARK}
 * when told to on stdin (while it waits for the lock) and {@code REFRESHED} once its first term's
 * task passed {@code ensureLeader()}, so the JVM's class-loading log between the two lines is
 * exactly what the takeover loaded. Arguments: JDBC URL, user, key value, candidate id.
 */
public final class WaitingChild {

  private WaitingChild() {}

  /**
   * Runs the standby until the parent ends this JVM.
   *
   * @param args JDBC URL, user, key value, candidate id
   */
  public static void main(String[] args) {
    PrintStream out = System.out;
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(args[0]);
    ds.setUser(args[1]);
    LeaderLoop loop =
        LeaderLoop.builder(ds, LockKey.of(Long.parseLong(args[2])))
            .candidateId(args[3])
            .takeover(TakeoverMode.WAIT)
            .refreshInterval(Duration.ofSeconds(1))
            .build();
    Thread marker =
        new Thread(
            () -> {
              BufferedReader in =
                  new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
              try {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                  if (line.equals("MARK")) {
                    out.println("MARK");
                    out.flush();
                  }
                }
              } catch (IOException e) {
                out.println("STDIN-FAILED");
              }
            },
            "retsu-lock-test-marker");
    marker.setDaemon(true);
    marker.start();
    loop.run(
        ctx -> {
          ctx.ensureLeader();
          out.println("REFRESHED");
          out.flush();
        });
  }
}
