package dev.retsu.lock;

import dev.retsu.lock.internal.Checks;
import dev.retsu.lock.internal.TimeSource;
import dev.retsu.lock.internal.session.SessionOpener;
import dev.retsu.lock.internal.session.SessionTerminator;
import dev.retsu.lock.internal.watch.Watcher;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * Who leads which key, pushed to any process, candidate or not: one dedicated session per watch
 * (open one per process and data source; it serves every key) that LISTENs on the channel {@code
 * retsu_lock}. Leaders notify it:
 *
 * <ul>
 *   <li>a new term ({@link LeaderChange.Cause#ACQUIRED}): the statement that takes the term's
 *       fencing token notifies in the same transaction, so every watcher hears it within
 *       milliseconds of the term's start;
 *   <li>a graceful end ({@link LeaderChange.Cause#RELEASED}): the leader notifies just before it
 *       releases (a loop's close or yield, a group's yield, rebalance or close);
 *   <li>a crash, a terminated session, a lost connection ({@link LeaderChange.Cause#ENDED}):
 *       nothing is notified, so every {@code checkInterval} (default 500 ms, {@link
 *       #DEFAULT_CHECK_INTERVAL}) the watch reads {@code pg_stat_activity} once for the pids of the
 *       leaders it knows: a session that ended is seen within {@code checkInterval} plus one round
 *       trip. (A killed process's session ends when the server notices: at once when its kernel
 *       closes the socket, after the leader's keepalive bound when the host vanished.)
 * </ul>
 *
 * <p>Per key, changes come in the order the terms started (their tokens' order), never the same
 * leader twice in a row; a watched key is first read once from {@code pg_locks} ({@link
 * LeaderChange.Cause#READ}), and so is every key after the watch's session was lost and opened
 * again (a server restart: changes meanwhile are missed, the read tells where things stand). The
 * session holds no transaction and no snapshot between statements, and never takes or waits for a
 * lock on a key. It needs pgjdbc to receive notifications; with another driver it reads {@code
 * pg_locks} every {@code checkInterval} instead.
 *
 * <pre>{@code
 * try (LeaderWatch watch = LeaderWatch.open(dataSource)) {
 *   watch.watch(key, change -> log.info("{} leads {}", change.leader(), change.key()));
 *   ...
 * }
 * }</pre>
 *
 * <p>Listeners run on the watch's thread ({@code retsu-lock-watch-<name>}, daemon), see {@link
 * LeaderChangeListener}. A loop or group built with {@link TermOptionsBuilder#leaderWatch} hears
 * its key's changes through {@link LeaderListener#onLeaderChanged}. Thread-safe.
 */
public final class LeaderWatch implements AutoCloseable {

  /** Default interval of the check for leaders that ended without a notice: 500 ms. */
  public static final Duration DEFAULT_CHECK_INTERVAL = Duration.ofMillis(500);

  /** Default wait before a lost watch session is opened again: 1 second. */
  public static final Duration DEFAULT_RECONNECT_INTERVAL = Duration.ofSeconds(1);

  private static final AtomicInteger COUNT = new AtomicInteger();

  /** The watch session's {@code application_name} starts with this. */
  public static final String APPLICATION_NAME_PREFIX = "retsu-lock-watch:";

  private final Watcher watcher;
  private final String name;

  private LeaderWatch(Builder b) {
    this.name = b.name != null ? b.name : "w" + COUNT.incrementAndGet();
    String context = "[watch=" + name + "]";
    String app = APPLICATION_NAME_PREFIX + name;
    SessionTerminator.prepare(b.dataSource);
    SessionOpener.Spec spec =
        new SessionOpener.Spec(
            b.dataSource,
            LockKey.named("retsu-lock", "watch"),
            "watch-" + name,
            context,
            app.length() > 63 ? app.substring(0, 63) : app,
            Map.of(),
            b.roundTripTimeout,
            Checks.MAX_DURATION,
            Checks.MAX_DURATION,
            TimeSource.SYSTEM);
    this.watcher = new Watcher(spec, b.checkInterval, b.reconnectInterval, b.candidateRole);
  }

  /**
   * Opens a watch with the defaults.
   *
   * @param dataSource where its session comes from (never returned to a pool)
   * @return the watch, listening
   * @throws AdvisoryLockException when its session cannot be opened (the SQLException is the cause)
   */
  public static LeaderWatch open(DataSource dataSource) {
    return builder(dataSource).open();
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where its session comes from
   * @return the builder
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * Watches a key: the listener first hears the key's current leader or nobody ({@link
   * LeaderChange.Cause#READ}), then every change, on the watch's thread.
   *
   * @param key the key
   * @param listener what hears the changes
   * @return what stops this listener (idempotent); the key is no longer watched once its last
   *     listener stopped
   */
  public Registration watch(LockKey key, LeaderChangeListener listener) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(listener, "listener");
    Runnable stop = watcher.watch(key, listener);
    return stop::run;
  }

  /**
   * Returns the leader of a watched key as last delivered, without I/O.
   *
   * @param key the key
   * @return the leader, or empty when nobody leads it or it is not watched (yet)
   */
  public Optional<LeaderInfo> leader(LockKey key) {
    return watcher.leader(key);
  }

  /**
   * Returns whether the watch's session is open and listening right now.
   *
   * @return false while it is being opened again
   */
  public boolean isConnected() {
    return watcher.connected();
  }

  /** {@return the watch's name, in its thread's name and its session's application_name} */
  public String name() {
    return name;
  }

  /** Stops the thread and ends the session. Idempotent; never throws. */
  @Override
  public void close() {
    watcher.close(Duration.ofSeconds(5));
  }

  @Override
  public String toString() {
    return "LeaderWatch[" + name + (isConnected() ? "" : ", disconnected") + "]";
  }

  /** Stops one listener. */
  @FunctionalInterface
  public interface Registration extends AutoCloseable {
    /** Stops the listener; idempotent, never throws. */
    @Override
    void close();
  }

  /** Options of a {@link LeaderWatch}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private String name;
    private Duration checkInterval = DEFAULT_CHECK_INTERVAL;
    private Duration reconnectInterval = DEFAULT_RECONNECT_INTERVAL;
    private Duration roundTripTimeout = AdvisoryLock.DEFAULT_ROUND_TRIP_TIMEOUT;
    private String candidateRole;
    private boolean failFast = true;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * Sets the watch's name, in its thread's name and {@code application_name}. Defaults to {@code
     * w<n>}.
     *
     * @param name 1 to 40 of {@code [A-Za-z0-9._-]}
     * @return this builder
     */
    public Builder name(String name) {
      Objects.requireNonNull(name, "name");
      if (!name.matches("[A-Za-z0-9._-]{1,40}")) {
        throw new IllegalArgumentException(
            "name must be 1 to 40 characters of A-Z, a-z, 0-9, '.', '_' or '-', but was \""
                + Checks.shorten(name)
                + "\"");
      }
      this.name = name;
      return this;
    }

    /**
     * Sets how often the watch looks for leaders whose session ended without a notice. Defaults to
     * 500 ms.
     *
     * @param interval at least 10 ms
     * @return this builder
     */
    public Builder checkInterval(Duration interval) {
      this.checkInterval = Checks.atLeast("checkInterval", interval, Duration.ofMillis(10));
      return this;
    }

    /**
     * Sets the wait before a lost watch session is opened again. Defaults to 1 second.
     *
     * @param interval positive
     * @return this builder
     */
    public Builder reconnectInterval(Duration interval) {
      this.reconnectInterval = Checks.positive("reconnectInterval", interval);
      return this;
    }

    /**
     * Sets the network timeout of the watch's round trips. Defaults to 10 seconds.
     *
     * @param timeout positive
     * @return this builder
     */
    public Builder roundTripTimeout(Duration timeout) {
      this.roundTripTimeout = Checks.positive("roundTripTimeout", timeout);
      return this;
    }

    /**
     * Sets the candidates' role: the role the watched keys' candidates log in as. A key held by a
     * session of any other role is delivered as a {@linkplain LeaderInfo#foreign() foreign} holder,
     * never as a candidate's term, whatever its {@code application_name} says. Defaults to the role
     * the watch's own session logs in as: set it when the watch runs under another role than the
     * candidates (an operator's, a monitoring role).
     *
     * @param role a role name: 1 to 63 bytes, no backslash or NUL
     * @return this builder
     */
    public Builder candidateRole(String role) {
      this.candidateRole = FencingSql.checkRole(role);
      return this;
    }

    /**
     * Sets whether {@link #open()} fails when the watch's session cannot be opened. With {@code
     * false} the watch opens anyway, disconnected ({@link LeaderWatch#isConnected()} false, every
     * key's leader unknown), and its thread opens the session every {@code reconnectInterval}, as
     * after a lost one; the keys are then read from {@code pg_locks}. For an application that may
     * start before its database. Defaults to {@code true}: a wrong URL fails at once.
     *
     * @param failFast whether a session that cannot be opened fails {@link #open()}
     * @return this builder
     */
    public Builder failFast(boolean failFast) {
      this.failFast = failFast;
      return this;
    }

    /**
     * Opens the watch: its session, listening, and its thread.
     *
     * @return the watch
     * @throws AdvisoryLockException when its session cannot be opened (unless {@link
     *     #failFast(boolean) failFast(false)})
     */
    public LeaderWatch open() {
      LeaderWatch w = new LeaderWatch(this);
      w.watcher.start("retsu-lock-watch-" + w.name, failFast);
      return w;
    }
  }
}
