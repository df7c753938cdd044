package dev.retsu.lock.quarkus.internal;

import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.RetsuLeader;
import dev.retsu.lock.quarkus.RetsuLeaderGroup;
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
 * Runs a {@code @LeaderOnly} method through its leader's gate (or, with a key, its group key's
 * gate): only on the leader (the key's owner), with the term bound to the thread; elsewhere (or
 * with the leaders disabled) it returns null without running.
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
    if (!binding.key().isEmpty()) {
      Optional<RetsuLeaderGroup> group = leaders.findGroup(binding.value());
      if (group.isEmpty() || !group.get().runIfOwner(binding.key(), ctx -> invocation.proceed())) {
        LOG.debug(
            "[group={}, key={}] Not owned here; skipped {}",
            binding.value(),
            binding.key(),
            invocation.getMethod());
      }
      return null;
    }
    Optional<RetsuLeader> leader = leaders.find(binding.value());
    if (leader.isEmpty() || !leader.get().runIfLeader(ctx -> invocation.proceed())) {
      LOG.debug("[leader={}] Not leading; skipped {}", binding.value(), invocation.getMethod());
    }
    return null;
  }
}
