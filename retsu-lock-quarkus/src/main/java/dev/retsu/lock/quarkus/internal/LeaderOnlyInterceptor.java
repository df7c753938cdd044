package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.RetsuLeader;
import dev.retsu.lock.quarkus.RetsuLeaders;
import jakarta.annotation.Priority;
import jakarta.inject.Inject;
import jakarta.interceptor.AroundInvoke;
import jakarta.interceptor.Interceptor;
import jakarta.interceptor.InvocationContext;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a {@code @LeaderOnly} method through its leader's gate: only on the leader, with the term
 * bound to the thread; on a standby (or with the leaders disabled) it returns null without running.
 */
@LeaderOnly("")
@Interceptor
@Priority(Interceptor.Priority.LIBRARY_BEFORE)
public class LeaderOnlyInterceptor {

  private static final Logger LOG = LoggerFactory.getLogger(LeaderOnlyInterceptor.class);

  private final RetsuLeaders leaders;

  @Inject
  LeaderOnlyInterceptor(RetsuLeaders leaders) {
    this.leaders = leaders;
  }

  @AroundInvoke
  Object around(InvocationContext invocation) throws Exception {
    LeaderOnly binding = invocation.getInterceptorBinding(LeaderOnly.class);
    Optional<RetsuLeader> leader = leaders.find(binding.value());
    if (leader.isEmpty() || !leader.get().runIfLeader(ctx -> invocation.proceed())) {
      LOG.debug("[leader={}] Not leading; skipped {}", binding.value(), invocation.getMethod());
    }
    return null;
  }
}
