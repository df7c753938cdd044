package dev.retsu.lock.spring.integration;

import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.LeaderEventPublisher;

/** A candidate and an event publisher that count what the initiator calls, for the tests. */
class Recorder extends DefaultCandidate implements LeaderEventPublisher {

  final AtomicInteger granted = new AtomicInteger();
  final AtomicInteger revoked = new AtomicInteger();
  final AtomicInteger grantedEvents = new AtomicInteger();
  final AtomicInteger revokedEvents = new AtomicInteger();
  final AtomicInteger failedEvents = new AtomicInteger();
  volatile boolean leaderWhenRevoked;
  volatile java.util.function.IntSupplier revokeProbe = () -> -1;
  volatile int probedAtRevoke;
  volatile Context lastContext;

  Recorder(String id, String role) {
    super(id, role);
  }

  @Override
  public void onGranted(Context ctx) {
    lastContext = ctx;
    granted.incrementAndGet();
  }

  @Override
  public void onRevoked(Context ctx) {
    leaderWhenRevoked = ctx.isLeader();
    probedAtRevoke = revokeProbe.getAsInt();
    revoked.incrementAndGet();
  }

  @Override
  public void publishOnGranted(Object source, Context context, String role) {
    grantedEvents.incrementAndGet();
  }

  @Override
  public void publishOnRevoked(Object source, Context context, String role) {
    revokedEvents.incrementAndGet();
  }

  @Override
  public void publishOnFailedToAcquire(Object source, Context context, String role) {
    failedEvents.incrementAndGet();
  }
}
