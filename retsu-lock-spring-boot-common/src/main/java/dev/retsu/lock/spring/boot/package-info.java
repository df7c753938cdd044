/**
 * Spring Boot 4 auto-configuration for retsu-lock. Configure named leaders under {@code
 * retsu.lock.leaders.<name>.*} ({@link dev.retsu.lock.spring.boot.RetsuLockProperties}); each is a
 * {@link dev.retsu.lock.spring.boot.RetsuLeader} bean, a SmartLifecycle that runs one {@link
 * dev.retsu.lock.LeaderLoop}. Leader work runs on the lease's own session: a {@link
 * dev.retsu.lock.LeaderTask} bean named like the leader, {@link
 * dev.retsu.lock.spring.boot.LeaderOnly} methods, and {@link
 * dev.retsu.lock.spring.boot.RetsuLeader#dataSource()} / {@code jdbcTemplate()} inside them.
 * Actuator (health {@code retsuLock}, info {@code leaderElection}, endpoint {@code leaders}),
 * Micrometer and Spring Integration support switch on when their modules are present.
 */
package dev.retsu.lock.spring.boot;
