/**
 * retsu-lock for Spring Boot 3.5 and 4, the part both lines share. Configure named leaders under
 * {@code retsu.lock.leaders.<name>.*} and groups under {@code retsu.lock.groups.<name>.*} ({@link
 * dev.retsu.lock.spring.boot.RetsuLockProperties}); each leader is a {@link
 * dev.retsu.lock.spring.boot.RetsuLeader} bean, a SmartLifecycle that runs one {@link
 * dev.retsu.lock.LeaderLoop}, and each group a {@link dev.retsu.lock.spring.boot.RetsuLeaderGroup}
 * bean that runs one {@link dev.retsu.lock.LeaderGroup}. Leader work runs on the lock's own
 * session: a {@link dev.retsu.lock.LeaderTask} bean named like the leader or group, {@link
 * dev.retsu.lock.spring.boot.LeaderOnly} methods, and {@code dataSource()} / {@code jdbcTemplate()}
 * inside them. The locks' DataSource is the one marked {@link
 * dev.retsu.lock.spring.boot.RetsuLockDataSource}. Health ({@link
 * dev.retsu.lock.spring.boot.RetsuLockHealth}, turned into each line's indicator {@code
 * retsuLock}), info {@code leaderElection}, the endpoint {@code leaders}, Micrometer (leader, group
 * and job metrics) and Spring Integration support switch on when their modules are present.
 * Applications depend on {@code retsu-lock-spring-boot3-starter} or {@code
 * retsu-lock-spring-boot4-starter}, never on this module alone.
 */
package dev.retsu.lock.spring.boot;
