package dev.retsu.lock.faults;

import dev.retsu.lock.TakeoverMode;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * Which takeover modes a fault scenario strikes. {@code -Pfaults-full} (which sets {@code
 * retsu.faults.rounds} above 1) strikes every case in POLL and in WAIT. The default build strikes
 * the slowest scenarios (those bound by the server's timeouts, and the ones with several variants)
 * in one mode per case, alternating, so that each variant and each mode is still struck on every
 * build; that keeps the default build inside its time budget.
 */
public final class FaultModes {

  /** Whether this is the full fault run. */
  public static final boolean FULL = Integer.getInteger("retsu.faults.rounds", 1) > 1;

  private FaultModes() {}

  /**
   * Every variant with the modes to strike it in: both in the full run; otherwise one, alternating
   * from POLL, so that the first variant runs in POLL, the second in WAIT, and so on.
   *
   * @param variants the variants, each a scenario's first arguments
   * @return the variant's arguments followed by a mode, per case
   */
  public static Stream<Arguments> alternating(List<Object[]> variants) {
    TakeoverMode[] modes = TakeoverMode.values();
    List<Arguments> out = new ArrayList<>();
    for (int i = 0; i < variants.size(); i++) {
      for (TakeoverMode m : modes) {
        if (FULL || m == modes[i % modes.length]) {
          Object[] args = new Object[variants.get(i).length + 1];
          System.arraycopy(variants.get(i), 0, args, 0, variants.get(i).length);
          args[args.length - 1] = m;
          out.add(Arguments.of(args));
        }
      }
    }
    return out.stream();
  }

  /**
   * Both modes in the full run; POLL alone by default.
   *
   * @return the modes
   */
  public static Stream<TakeoverMode> pollByDefault() {
    return FULL ? Stream.of(TakeoverMode.values()) : Stream.of(TakeoverMode.POLL);
  }

  /**
   * Both modes in the full run; WAIT alone by default.
   *
   * @return the modes
   */
  public static Stream<TakeoverMode> waitByDefault() {
    return FULL ? Stream.of(TakeoverMode.values()) : Stream.of(TakeoverMode.WAIT);
  }
}
