package dev.retsu.lock.spring.integration;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderLoop;
import dev.retsu.lock.LeaderLoopBuilder;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ApplicationEventPublisherAware;
import org.springframework.context.SmartLifecycle;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.event.DefaultLeaderEventPublisher;
import org.springframework.integration.leader.event.LeaderEventPublisher;

/**
 * A leader initiator for Spring Integration's leader SPI on a {@link LeaderLoop}: a drop-in for
 * {@code LockRegistryLeaderInitiator}. The candidate's role is the lock, {@code
 * LockKey.named(namespace, role)}; when this node wins it, {@link Candidate#onGranted(Context)} is
 * called and an {@code OnGrantedEvent} published, so a {@code SmartLifecycleRoleController} (which
 * {@code @EnableIntegration} registers) starts the endpoints of that role, such as an
 * {@code @InboundChannelAdapter} with {@code @Role}. When the term ends, for any reason, {@link
 * Candidate#onRevoked(Context)} is called and {@code OnRevokedEvent} published. For an end this
 * node chooses ({@link #stop()}, {@link Context#yield()}, a failed {@code onGranted}) and for
 * self-fencing, that happens <em>before the lock is released</em>, so the role's endpoints stop
 * before another node can start them (an {@code onRevoked} that runs past the loop's {@code
 * closeTimeout}, 10 s, is logged at ERROR and the lock released under it). A lost session
 * (terminated, server restart, broken connection) is different: the server has released the key by
 * the time this node learns of it, so {@code onRevoked} can overlap the next leader's {@code
 * onGranted}. A role that must never overlap sets lock-delay on every node ({@code
 * LeaderLoopBuilder.takeoverDelay} through {@link Builder#loop(Consumer)}: after a term that did
 * not end gracefully, the next node's {@code onGranted} comes only once the delay has passed; keep
 * {@code onRevoked} shorter than it) and hands the term's fencing token ({@link #currentTerm()}) to
 * what it writes.
 *
 * <ul>
 *   <li>{@link Context#isLeader()} is true from the grant until the term ends or its self-fencing
 *       deadline passes; {@link Context#getRole()} is the candidate's role.
 *   <li>{@link Context#yield()} ends the term gracefully (revoke, then release) and stays a
 *       candidate: a new loop contends again after {@link Builder#yieldCooldown(Duration)}, which
 *       gives the other candidates the first chance.
 *   <li>A lost session, a failed {@code onGranted}, or a database outage revokes leadership and the
 *       node keeps contending; {@link #stop()} revokes, releases and stops contending; {@link
 *       #start()} after it contends again.
 * </ul>
 *
 * <p>{@code onGranted} is called on the loop's thread, {@code retsu-lock-leader-<candidate id>},
 * and may block until it is interrupted (Spring Integration's contract); it then counts as one
 * refresh of the loop, so keep it shorter than the loop's {@code refreshTimeout} (60 s by default,
 * see {@link Builder#loop(Consumer)}), or return at once and work elsewhere. {@code onRevoked} and
 * the revoke event come from the loop's thread, or from its watchdog thread when the term
 * self-fences. Thread-safe.
 */
public final class RetsuLeaderInitiator
    implements SmartLifecycle, DisposableBean, ApplicationEventPublisherAware {

  /** Default namespace of the role keys: {@code spring-integration}. */
  public static final String DEFAULT_NAMESPACE = "spring-integration";

  /**
   * Default wait between standby attempts: 1 second, so a node that yielded or stopped is followed
   * within about a second (core's own default is 15 s).
   */
  public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(1);

  /**
   * Default pause after {@link Context#yield()} before this node contends again: 2 seconds, two
   * attempts of a candidate at the default retry interval.
   */
  public static final Duration DEFAULT_YIELD_COOLDOWN = Duration.ofSeconds(2);

  /**
   * Default lifecycle phase, as Spring Integration's initiators: {@code Integer.MAX_VALUE - 1000}.
   */
  public static final int DEFAULT_PHASE = Integer.MAX_VALUE - 1000;

  private static final Logger LOG = LoggerFactory.getLogger(RetsuLeaderInitiator.class);
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  private final DataSource dataSource;
  private final Candidate candidate;
  private final LockKey key;
  private final Duration retryInterval;
  private final Duration yieldCooldown;
  private final Consumer<LeaderLoopBuilder> customizer;
  private final boolean publishFailedEvents;
  private final boolean autoStartup;
  private final int phase;
  private final ReentrantLock lifecycle = new ReentrantLock();
  private final ScheduledExecutorService restarts;
  private final RoleContext context = new RoleContext();
  private volatile LeaderEventPublisher publisher;
  private ApplicationEventPublisher applicationEventPublisher;

  // guarded by lifecycle
  private boolean running;
  private LeaderLoop loop;
  private long generation;

  private RetsuLeaderInitiator(Builder b) {
    this.dataSource = b.dataSource;
    this.candidate = b.candidate;
    this.key = LockKey.named(b.namespace, b.candidate.getRole());
    this.retryInterval = b.retryInterval;
    this.yieldCooldown = b.yieldCooldown;
    this.customizer = b.customizer;
    this.publishFailedEvents = b.publishFailedEvents;
    this.autoStartup = b.autoStartup;
    this.phase = b.phase;
    this.publisher = b.publisher;
    String name = "retsu-lock-si-restart-" + INSTANCES.incrementAndGet();
    ScheduledThreadPoolExecutor s =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, name);
              t.setDaemon(true);
              return t;
            });
    s.setRemoveOnCancelPolicy(true);
    this.restarts = s;
  }

  /**
   * Returns a builder.
   *
   * @param dataSource where sessions come from; pooled or not
   * @param candidate the candidate: its role names the lock, its id is the candidate id
   * @return the builder
   */
  public static Builder builder(DataSource dataSource, Candidate candidate) {
    return new Builder(dataSource, candidate);
  }

  /**
   * Returns the lock key of the candidate's role.
   *
   * @return the key
   */
  public LockKey key() {
    return key;
  }

  /**
   * Returns the context: whether this node leads the role now, and {@code yield()}.
   *
   * @return the context, the same object for the initiator's whole life
   */
  public Context getContext() {
    return context;
  }

  /**
   * Returns the current term while this node leads (its fencing token, its backend pid).
   *
   * @return the term, or empty
   */
  public Optional<Term> currentTerm() {
    LeaderLoop l = currentLoop();
    return l == null ? Optional.empty() : l.currentTerm();
  }

  @Override
  public void setApplicationEventPublisher(ApplicationEventPublisher applicationEventPublisher) {
    this.applicationEventPublisher = applicationEventPublisher;
  }

  /** Starts contending for the role; does nothing if already running. */
  @Override
  public void start() {
    lifecycle.lock();
    try {
      if (running) {
        return;
      }
      if (publisher == null && applicationEventPublisher != null) {
        publisher = new DefaultLeaderEventPublisher(applicationEventPublisher);
      }
      running = true;
      startLoop();
    } finally {
      lifecycle.unlock();
    }
  }

  /**
   * Stops contending: a leader's {@code onRevoked} runs and its revoke event is published, then the
   * lock is released. Returns once the loop has stopped (bounded by the loop's {@code
   * closeTimeout}).
   */
  @Override
  public void stop() {
    LeaderLoop l;
    lifecycle.lock();
    try {
      if (!running) {
        return;
      }
      running = false;
      generation++;
      l = loop;
      loop = null;
    } finally {
      lifecycle.unlock();
    }
    if (l != null) {
      l.close();
    }
  }

  @Override
  public boolean isRunning() {
    lifecycle.lock();
    try {
      return running;
    } finally {
      lifecycle.unlock();
    }
  }

  @Override
  public boolean isAutoStartup() {
    return autoStartup;
  }

  @Override
  public int getPhase() {
    return phase;
  }

  /** Stops, and ends the restart thread. */
  @Override
  public void destroy() {
    stop();
    restarts.shutdownNow();
  }

  @Override
  public String toString() {
    return "RetsuLeaderInitiator{role="
        + candidate.getRole()
        + ", id="
        + candidate.getId()
        + ", key="
        + key
        + ", leader="
        + context.isLeader()
        + "}";
  }

  private LeaderLoop currentLoop() {
    lifecycle.lock();
    try {
      return loop;
    } finally {
      lifecycle.unlock();
    }
  }

  /** Builds and starts a new loop; called with the lifecycle lock held. */
  private void startLoop() {
    long gen = generation;
    LeaderLoopBuilder b =
        LeaderLoop.builder(dataSource, key)
            .candidateId(candidate.getId())
            .retryInterval(retryInterval)
            .failFast(false)
            .listener(new Events(gen));
    customizer.accept(b);
    LeaderLoop l = b.build();
    loop = l;
    CompletableFuture<Void> done =
        l.start(
            ctx -> {
              if (context.grant(gen)) {
                candidate.onGranted(context);
                publish(p -> p.publishOnGranted(this, context, candidate.getRole()));
              }
            });
    done.whenComplete(
        (ok, failure) -> {
          if (failure != null) {
            LOG.error(
                "{} Leader loop for role {} failed; contending again after {}",
                l.logPrefix(),
                candidate.getRole(),
                yieldCooldown,
                failure);
            restartLater(gen, l);
          }
        });
  }

  /** Ends the current loop gracefully and contends again after the cooldown; from any thread. */
  void yieldLeadership() {
    LeaderLoop l;
    long gen;
    lifecycle.lock();
    try {
      if (!running || loop == null || !context.isLeader()) {
        return;
      }
      l = loop;
      gen = generation;
    } finally {
      lifecycle.unlock();
    }
    LOG.info("{} Yielding the role {}", l.logPrefix(), candidate.getRole());
    // close() waits for the loop's thread, which may be the caller (yield from onGranted): close
    // on the restart thread, then contend again after the cooldown
    restarts.execute(
        () -> {
          l.close();
          restartLater(gen, l);
        });
  }

  private void restartLater(long gen, LeaderLoop ended) {
    try {
      restarts.schedule(
          () -> {
            lifecycle.lock();
            try {
              if (running && generation == gen && loop == ended) {
                generation++;
                startLoop();
              }
            } finally {
              lifecycle.unlock();
            }
          },
          yieldCooldown.toMillis(),
          TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      LOG.debug("Initiator destroyed; not contending again for {}", candidate.getRole());
    }
  }

  private void publish(Consumer<LeaderEventPublisher> event) {
    LeaderEventPublisher p = publisher;
    if (p == null) {
      return;
    }
    try {
      event.accept(p);
    } catch (RuntimeException e) {
      LOG.warn("Publishing a leader event for role {} failed", candidate.getRole(), e);
    }
  }

  /** The loop's listener: revoke on every term end, failed-to-acquire events on request. */
  private final class Events implements LeaderListener {
    private final long gen;

    Events(long gen) {
      this.gen = gen;
    }

    @Override
    public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
      if (publishFailedEvents && result == AttemptResult.HELD_ELSEWHERE) {
        publish(
            p ->
                p.publishOnFailedToAcquire(
                    RetsuLeaderInitiator.this, context, candidate.getRole()));
      }
    }

    @Override
    public void onLost(Term term, LossReason reason, Throwable cause) {
      if (!context.revoke(gen)) {
        return; // onGranted never ran for this term
      }
      LOG.info("Role {} revoked ({}) from {}", candidate.getRole(), reason, candidate.getId());
      try {
        candidate.onRevoked(context);
      } catch (RuntimeException e) {
        LOG.warn("onRevoked of {} threw", candidate, e);
      }
      publish(p -> p.publishOnRevoked(RetsuLeaderInitiator.this, context, candidate.getRole()));
    }
  }

  /** The one context of this initiator; leader between a grant and the end of its term. */
  private final class RoleContext implements Context {
    private final ReentrantLock state = new ReentrantLock();
    private long grantedIn = -1;

    /** Marks the first refresh of a term as granted; false for later refreshes. */
    boolean grant(long gen) {
      state.lock();
      try {
        if (grantedIn == gen) {
          return false;
        }
        grantedIn = gen;
        return true;
      } finally {
        state.unlock();
      }
    }

    boolean revoke(long gen) {
      state.lock();
      try {
        if (grantedIn != gen) {
          return false;
        }
        grantedIn = -1;
        return true;
      } finally {
        state.unlock();
      }
    }

    @Override
    public boolean isLeader() {
      LeaderLoop l = currentLoop();
      state.lock();
      try {
        return grantedIn >= 0 && l != null && l.isLeader();
      } finally {
        state.unlock();
      }
    }

    @Override
    public void yield() {
      yieldLeadership();
    }

    @Override
    public String getRole() {
      return candidate.getRole();
    }

    @Override
    public String toString() {
      return "RetsuLeaderContext{role="
          + candidate.getRole()
          + ", id="
          + candidate.getId()
          + ", isLeader="
          + isLeader()
          + "}";
    }
  }

  /** Options of a {@link RetsuLeaderInitiator}; each has a default. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private final Candidate candidate;
    private String namespace = DEFAULT_NAMESPACE;
    private Duration retryInterval = DEFAULT_RETRY_INTERVAL;
    private Duration yieldCooldown = DEFAULT_YIELD_COOLDOWN;
    private Consumer<LeaderLoopBuilder> customizer = b -> {};
    private boolean publishFailedEvents;
    private boolean autoStartup = true;
    private int phase = DEFAULT_PHASE;
    private LeaderEventPublisher publisher;

    private Builder(DataSource dataSource, Candidate candidate) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.candidate = Objects.requireNonNull(candidate, "candidate");
      Objects.requireNonNull(candidate.getRole(), "candidate.getRole()");
      Objects.requireNonNull(candidate.getId(), "candidate.getId()");
    }

    /**
     * Sets the namespace role keys live in: the key of role {@code r} is {@code
     * LockKey.named(namespace, r)}. Defaults to {@value RetsuLeaderInitiator#DEFAULT_NAMESPACE}.
     *
     * @param namespace not blank
     * @return this builder
     */
    public Builder namespace(String namespace) {
      this.namespace = Checks.notBlank("namespace", namespace);
      return this;
    }

    /**
     * Sets the wait between attempts while another node leads. Defaults to 1 second.
     *
     * @param interval at least 10 ms
     * @return this builder
     */
    public Builder retryInterval(Duration interval) {
      this.retryInterval = Checks.atLeast("retryInterval", interval, Duration.ofMillis(10));
      return this;
    }

    /**
     * Sets how long a node that yielded waits before it contends again. Defaults to 2 seconds; keep
     * it above the other candidates' retry interval, or they may not get their chance.
     *
     * @param cooldown zero or more
     * @return this builder
     */
    public Builder yieldCooldown(Duration cooldown) {
      this.yieldCooldown = Checks.atLeast("yieldCooldown", cooldown, Duration.ZERO);
      return this;
    }

    /**
     * Adjusts the loop's other options (takeover mode, heartbeat, self-fencing, timeouts, extra
     * listeners), applied to every loop this initiator builds, after its own settings.
     *
     * @param customizer called with each loop's builder
     * @return this builder
     */
    public Builder loop(Consumer<LeaderLoopBuilder> customizer) {
      this.customizer = Objects.requireNonNull(customizer, "customizer");
      return this;
    }

    /**
     * Sets whether every attempt that finds the role held elsewhere publishes {@code
     * OnFailedToAcquireMutexEvent}. Defaults to false, as Spring Integration's.
     *
     * @param publish whether to publish
     * @return this builder
     */
    public Builder publishFailedEvents(boolean publish) {
      this.publishFailedEvents = publish;
      return this;
    }

    /**
     * Sets the publisher of leader events. Defaults to a {@code DefaultLeaderEventPublisher} on the
     * application context's event publisher (which a {@code SmartLifecycleRoleController} hears);
     * without either, no events are published.
     *
     * @param publisher the publisher
     * @return this builder
     */
    public Builder leaderEventPublisher(LeaderEventPublisher publisher) {
      this.publisher = Objects.requireNonNull(publisher, "publisher");
      return this;
    }

    /**
     * Sets whether the application context starts the initiator. Defaults to true.
     *
     * @param autoStartup whether to start with the context
     * @return this builder
     */
    public Builder autoStartup(boolean autoStartup) {
      this.autoStartup = autoStartup;
      return this;
    }

    /**
     * Sets the lifecycle phase. Defaults to {@link #DEFAULT_PHASE}.
     *
     * @param phase the phase
     * @return this builder
     */
    public Builder phase(int phase) {
      this.phase = phase;
      return this;
    }

    /**
     * Builds the initiator; the loop's options are checked now, by building one loop that never
     * runs.
     *
     * @return the initiator, not started
     */
    public RetsuLeaderInitiator build() {
      LeaderLoopBuilder probe =
          LeaderLoop.builder(dataSource, LockKey.named(namespace, candidate.getRole()))
              .candidateId(candidate.getId())
              .retryInterval(retryInterval);
      customizer.accept(probe);
      probe.build().close();
      return new RetsuLeaderInitiator(this);
    }
  }
}
