package dev.retsu.lock.spring.boot.internal;

import org.springframework.boot.SpringBootVersion;

/**
 * The start-up check of each Spring Boot line's module: a starter for one line on an application of
 * another fails at once with the one-line fix, instead of starting with parts silently missing (a
 * Boot 4 starter on Boot 3.5 starts, leads and runs its jobs, but its health indicator is never
 * registered). Stateless.
 */
public final class BootLine {

  private BootLine() {}

  /**
   * Fails unless the application runs the given Spring Boot major line, at least the given minor.
   *
   * @param major the line this module is built for: 3 or 4
   * @param minMinor the least minor version of that line it supports
   * @param running the running Spring Boot version, {@link SpringBootVersion#getVersion()}
   * @throws WrongBootLineException (an {@link IllegalStateException}) naming the running version
   *     and the starter to use instead
   */
  public static void require(int major, int minMinor, String running) {
    String version = running == null ? "unknown" : running;
    int[] mm = parse(version);
    if (mm[0] == major && mm[1] >= minMinor) {
      return;
    }
    String mine = "retsu-lock-spring-boot" + major + "-starter";
    String other = "retsu-lock-spring-boot" + (major == 3 ? 4 : 3) + "-starter";
    String fix;
    if ((mm[0] == 3 && mm[1] >= 5 && major == 4) || (mm[0] == 4 && major == 3)) {
      fix =
          "use "
              + other
              + " instead of "
              + mine
              + " (same version; with both starters on the class path, remove one)";
    } else if (mm[0] > 4) {
      fix =
          "Spring Boot "
              + mm[0]
              + " is not supported by this retsu-lock version (it supports 3.5 and 4.x)";
    } else {
      fix = "upgrade to Spring Boot 3.5 or later (retsu-lock supports 3.5 and 4.x)";
    }
    throw new WrongBootLineException(
        mine
            + " is for Spring Boot "
            + major
            + "."
            + minMinor
            + " and later "
            + major
            + ".x, but this application runs Spring Boot "
            + version,
        fix);
  }

  /** The running Spring Boot version. */
  public static String running() {
    return SpringBootVersion.getVersion();
  }

  private static int[] parse(String version) {
    String[] parts = version.split("[.-]");
    try {
      return new int[] {
        Integer.parseInt(parts[0]), parts.length > 1 ? Integer.parseInt(parts[1]) : 0
      };
    } catch (NumberFormatException e) {
      return new int[] {-1, -1};
    }
  }
}
