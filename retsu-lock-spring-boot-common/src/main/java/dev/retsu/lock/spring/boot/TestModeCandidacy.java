package dev.retsu.lock.spring.boot;

import dev.retsu.lock.FencingToken;
import dev.retsu.lock.LeaderInfo;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.spring.boot.RetsuLockProperties.TestMode;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A leader without a database, for tests of applications: {@code ALWAYS_LEADER} leads one term from
 * start to stop and runs its task every refresh interval on {@code retsu-lock-test-leader-<name>};
 * {@code NEVER_LEADER} never leads. Thread-safe.
 */
final class TestModeCandidacy implements Candidacy {

  private static final Logger LOG = LoggerFactory.getLogger(TestModeCandidacy.class);

  private final String name;
  private final LockKey key;
  private final String candidateId;
  private final TestMode mode;
  private final Duration refreshInterval;
  private final Duration closeTimeout;
  private volatile TestModeContext context;
  private volatile Thread thread;
  private volatile Terms terms;

  TestModeCandidacy(
      String name,
      LockKey key,
      String candidateId,
      TestMode mode,
      Duration refreshInterval,
      Duration closeTimeout) {
    this.name = name;
    this.key = key;
    this.candidateId = candidateId;
    this.mode = mode;
    this.refreshInterval = refreshInterval;
    this.closeTimeout = closeTimeout;
  }

  @Override
  public void start(LeaderTask task, Terms terms) {
    this.terms = terms;
    if (mode != TestMode.ALWAYS_LEADER) {
      return;
    }
    Term term = new Term(1, key, candidateId, Instant.now(), new FencingToken(0, 0, 1), 0);
    TestModeContext ctx = new TestModeContext(name, term);
    context = ctx;
    terms.started(term);
    Thread t = new Thread(() -> lead(task, ctx, terms), "retsu-lock-test-leader-" + name);
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  private void lead(LeaderTask task, TestModeContext ctx, Terms terms) {
    while (ctx.isLeader() && !Thread.currentThread().isInterrupted()) {
      try {
        terms.refresh(task, ctx);
        terms.refreshed(ctx.term());
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        LOG.warn("[leader={}] Test-mode refresh failed; still leading", name, e);
      }
      try {
        TimeUnit.NANOSECONDS.sleep(refreshInterval.toNanos());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  @Override
  public void close() {
    Thread t = thread;
    if (t != null) {
      t.interrupt();
      try {
        t.join(closeTimeout.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    TestModeContext ctx = context;
    if (ctx != null) {
      context = null;
      ctx.end();
      terms.ended(ctx.term(), LossReason.CLOSED);
    }
  }

  @Override
  public boolean isLeader() {
    TestModeContext ctx = context;
    return ctx != null && ctx.isLeader();
  }

  @Override
  public Optional<Term> currentTerm() {
    TestModeContext ctx = context;
    return ctx == null ? Optional.empty() : Optional.of(ctx.term());
  }

  @Override
  public Optional<LeaderInfo> currentHolder() {
    if (!isLeader()) {
      return Optional.empty();
    }
    return Optional.of(
        new LeaderInfo(
            key,
            candidateId,
            0,
            "test-mode",
            Optional.empty(),
            OptionalLong.empty(),
            Optional.empty(),
            Optional.empty(),
            Optional.empty()));
  }

  @Override
  public Optional<Throwable> failure() {
    return Optional.empty();
  }

  @Override
  public void describe(Map<String, Object> details) {
    details.put("testMode", mode.name());
  }
}
