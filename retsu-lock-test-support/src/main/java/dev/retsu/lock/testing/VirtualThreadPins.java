package dev.retsu.lock.testing;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Assumptions;

/**
 * Virtual threads for tests that are compiled for Java 17 and run on Java 21 or later: a factory of
 * virtual threads (made by reflection, so the tests compile with {@code --release 17}), and the
 * carrier pins that happened while an action ran, as JFR records them ({@value #PINNED_EVENT},
 * every one: threshold 0, with its stack).
 *
 * <p>On a JVM older than 21 the tests that need them are skipped, unless the system property
 * {@value #REQUIRED_PROPERTY} is {@code true} (the {@code virtual-threads} build profile sets it):
 * then they fail, so that a profile run on the wrong JDK cannot pass by skipping everything.
 *
 * <p>What JFR can see depends on the JVM: from Java 24 on a virtual thread that blocks inside
 * {@code synchronized} or {@code Object.wait} no longer pins its carrier, so there only a native
 * frame or a class initializer pins. Thread-safe (stateless).
 */
public final class VirtualThreadPins {

  /** The JFR event of a virtual thread that blocked while pinned to its carrier. */
  public static final String PINNED_EVENT = "jdk.VirtualThreadPinned";

  /** Set to {@code true} to fail, not skip, the tests that need virtual threads on Java 17-20. */
  public static final String REQUIRED_PROPERTY = "retsu.tests.virtual-threads.required";

  private VirtualThreadPins() {}

  /** An action that may throw. */
  @FunctionalInterface
  public interface Action {
    /**
     * Runs.
     *
     * @throws Exception anything
     */
    void run() throws Exception;
  }

  /**
   * One pin: how long the virtual thread stayed blocked on its carrier, and its stack, top first.
   *
   * @param duration how long it was pinned
   * @param thread the virtual thread's name
   * @param frames {@code class.method:line}, top first
   */
  public record Pin(Duration duration, String thread, List<String> frames) {

    /**
     * Whether a frame of a class in the package (or a sub-package) is on the stack.
     *
     * @param packageName e.g. {@code dev.retsu.lock}
     * @return true if one is
     */
    public boolean touches(String packageName) {
      String prefix = packageName + ".";
      return frames.stream().anyMatch(f -> f.startsWith(prefix));
    }

    /**
     * The first frame outside the JDK ({@code java.}, {@code jdk.}, {@code sun.}, {@code
     * com.sun.}): the code that blocked while pinned, or called the JDK method that did.
     *
     * @return {@code class.method:line}, or empty when every frame is the JDK's
     */
    public String culprit() {
      return frames.stream()
          .filter(
              f ->
                  !f.startsWith("java.")
                      && !f.startsWith("jdk.")
                      && !f.startsWith("sun.")
                      && !f.startsWith("com.sun."))
          .findFirst()
          .orElse("");
    }

    /**
     * Whether the code that blocked while pinned ({@link #culprit()}) is in the package, or a
     * sub-package, and not in one of the classes named.
     *
     * @param packageName e.g. {@code dev.retsu.lock}
     * @param except classes whose frames do not count (the test's own)
     * @return true if the package's code pinned
     */
    public boolean causedBy(String packageName, Class<?>... except) {
      String c = culprit();
      if (!c.startsWith(packageName + ".")) {
        return false;
      }
      for (Class<?> e : except) {
        if (c.startsWith(e.getName() + ".") || c.startsWith(e.getName() + "$")) {
          return false;
        }
      }
      return true;
    }

    @Override
    public String toString() {
      return "pinned "
          + duration.toNanos() / 1000
          + " µs on "
          + thread
          + ":\n    at "
          + String.join("\n    at ", frames);
    }
  }

  /**
   * Whether this JVM has virtual threads (Java 21 or later).
   *
   * @return true from Java 21 on
   */
  public static boolean available() {
    return Runtime.version().feature() >= 21;
  }

  /**
   * Skips the calling test on a JVM without virtual threads, or fails it there when {@value
   * #REQUIRED_PROPERTY} is {@code true}.
   */
  public static void assumeAvailable() {
    if (available()) {
      return;
    }
    String why =
        "virtual threads need Java 21 or later, but this JVM is "
            + Runtime.version()
            + " ("
            + System.getProperty("java.home")
            + ")";
    if (Boolean.getBoolean(REQUIRED_PROPERTY)) {
      throw new AssertionError(why + "; the virtual-threads profile runs the tests on JAVA25_HOME");
    }
    Assumptions.abort(why);
  }

  /**
   * A factory of virtual threads named {@code prefix0}, {@code prefix1}, ...
   *
   * @param prefix the name prefix
   * @return the factory
   */
  public static ThreadFactory factory(String prefix) {
    try {
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      Class<?> ofVirtual = Class.forName("java.lang.Thread$Builder$OfVirtual");
      builder = ofVirtual.getMethod("name", String.class, long.class).invoke(builder, prefix, 0L);
      return (ThreadFactory) ofVirtual.getMethod("factory").invoke(builder);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("virtual threads are not available on this JVM", e);
    }
  }

  /**
   * Whether a thread is a virtual thread.
   *
   * @param thread the thread
   * @return false on a JVM without virtual threads
   */
  public static boolean isVirtual(Thread thread) {
    if (!available()) {
      return false;
    }
    try {
      return (Boolean) Thread.class.getMethod("isVirtual").invoke(thread);
    } catch (InvocationTargetException | IllegalAccessException | NoSuchMethodException e) {
      throw new IllegalStateException("Thread.isVirtual() failed", e);
    }
  }

  /**
   * Runs an action under a JFR recording of every {@value #PINNED_EVENT} (threshold 0, with stacks)
   * and returns the pins it recorded, read back from the dumped recording.
   *
   * @param action what to run
   * @return the pins, in the order JFR wrote them
   * @throws Exception what the action threw, or a failure to dump or read the recording
   */
  public static List<Pin> during(Action action) throws Exception {
    Path file = Files.createTempFile("retsu-lock-pins-", ".jfr");
    try (Recording recording = new Recording()) {
      recording.setName("retsu-lock virtual thread pins");
      recording.enable(PINNED_EVENT).withThreshold(Duration.ZERO).withStackTrace();
      recording.setToDisk(true);
      recording.start();
      try {
        action.run();
      } finally {
        recording.stop();
      }
      recording.dump(file);
      return read(file);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  private static List<Pin> read(Path file) throws IOException {
    List<Pin> pins = new ArrayList<>();
    for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
      if (!PINNED_EVENT.equals(e.getEventType().getName())) {
        continue;
      }
      List<String> frames =
          e.getStackTrace() == null
              ? List.of()
              : e.getStackTrace().getFrames().stream()
                  .map(VirtualThreadPins::frame)
                  .collect(Collectors.toList());
      String thread = e.getThread() == null ? "?" : String.valueOf(e.getThread().getJavaName());
      pins.add(new Pin(e.getDuration(), thread, frames));
    }
    return pins;
  }

  private static String frame(RecordedFrame f) {
    return f.getMethod().getType().getName()
        + "."
        + f.getMethod().getName()
        + ":"
        + f.getLineNumber();
  }
}
