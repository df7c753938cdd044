/**
 * Leader election on PostgreSQL session advisory locks.
 *
 * <h2>Where to start</h2>
 *
 * <ul>
 *   <li>{@link dev.retsu.lock.LeaderLoop}: what services call. Build it with {@link
 *       dev.retsu.lock.LeaderLoop#builder}, run a {@link dev.retsu.lock.LeaderTask}, check {@link
 *       dev.retsu.lock.LeaderContext#ensureLeader()} before every effect.
 *   <li>{@link dev.retsu.lock.AdvisoryLock} and {@link dev.retsu.lock.AdvisoryLockLease}: one lock
 *       taken by hand, when you do not need a loop.
 *   <li>{@link dev.retsu.lock.LeaderGroup}: many keys per process (shards, tenants), spread fairly
 *       over the members, each key with its own terms, over a few sessions.
 *   <li>{@link dev.retsu.lock.LockKey}: where candidates meet.
 *   <li>{@link dev.retsu.lock.LeaderListener}: what metrics and logs hear.
 * </ul>
 *
 * <h2>Each invariant, its home and its proof</h2>
 *
 * <table>
 *   <caption>Invariants of the design, the type that holds each, and the test that proves it
 *   against a real PostgreSQL</caption>
 *   <tr><th>invariant</th><th>home</th><th>proof</th></tr>
 *   <tr><td>1. one holder</td><td>{@code SessionSql} (the locking statement)</td>
 *       <td>{@code AdvisoryLockIntegrationTest.exactlyOneOf32ConcurrentCandidatesWins}</td></tr>
 *   <tr><td>2. session-bound work</td><td>{@code internal.SessionGuard} via {@link
 *       dev.retsu.lock.AdvisoryLockLease#connection()}</td>
 *       <td>{@code LeaseConnectionEscapeIntegrationTest}</td></tr>
 *   <tr><td>3. no inherited leadership</td><td>{@code internal.SessionTerminator}</td>
 *       <td>{@code AdvisoryLockIntegrationTest.closeEvictsFromHikariSoTheNextBorrowerHoldsNothing}
 *       and its DBCP2, wrapper and plain variants</td></tr>
 *   <tr><td>4. not on a replica, not through a transaction pooler</td><td>{@code SessionSql},
 *       {@code Refusals}, {@code LockWaiter}</td>
 *       <td>{@code HotStandbyIntegrationTest}, {@code PgBouncerIntegrationTest}</td></tr>
 *   <tr><td>5. at most one acting leader</td><td>{@code LeaderTerm} (end order, checks), with
 *       {@code SelfFence} (client deadline), {@code ServerBounds} (server side) and {@code
 *       internal.PgSession} (the socket probe)</td>
 *       <td>{@code ActingLeaderIntegrationTest}, {@code FaultInjectionIntegrationTest}; the end
 *       order without a database: {@code TermEndTest}</td></tr>
 *   <tr><td>6. never stuck, never silent</td><td>{@link dev.retsu.lock.LeaderLoop} (the contend
 *       loop, lifecycle), {@code Standby} (attempts, EXIT or STEP_DOWN, backoff), {@code
 *       TermRunner} (one term from its token to its end)</td>
 *       <td>{@code LeaderLoopIntegrationTest.stepDownContendsAgainWithStrictlyIncreasingFencingTokens},
 *       {@code LeaderLoopIntegrationTest.firstAttemptAgainstAnUnreachableDatabaseFailsFast}; the
 *       decisions without a database: {@code LoopPolicyTest}</td></tr>
 *   <tr><td>7. leader-only gauges</td><td>{@code QueueStateMetrics} (retsu-lock-micrometer)</td>
 *       <td>{@code QueueStateFailoverIntegrationTest}</td></tr>
 *   <tr><td>8. fencing</td><td>{@code SessionSql.fencingToken}, taken by {@code
 *       TermRunner.begin} when a term begins</td>
 *       <td>{@code ReplicaFailoverIntegrationTest},
 *       {@code LeaderLoopIntegrationTest.serverRestartWhileLeadingUnderStepDownElectsALeaderAgain}</td></tr>
 *   <tr><td>the same invariants per key in a {@link dev.retsu.lock.LeaderGroup}</td><td>{@code
 *       GroupSql} (locking and proof statements), {@code GroupSession} (one session, its worker,
 *       its deadline), {@code KeyTerm} (one key's term and checks), {@code Rebalancer} (fair
 *       share)</td>
 *       <td>{@code LeaderGroupIntegrationTest}, {@code LeaderGroupFaultIntegrationTest}, {@code
 *       LeaderGroupSessionIntegrationTest}, {@code RebalancerTest}</td></tr>
 * </table>
 *
 * <h2>Tests</h2>
 *
 * <p>Unit tests ({@code *Test}, Surefire) need no database and take milliseconds: {@code
 * LoopDecisionsTest} (bounds, the deadline on two clocks, jitter, backoff), {@code LoopPolicyTest}
 * (EXIT or STEP_DOWN, what ends the loop and what it rides out), {@code TermEndTest} (the order in
 * which a term ends and what listeners hear), {@code LeaderLoopBuilderTest}, {@code LockKeyTest},
 * and {@code ModuleDescriptorTest} (the module exports this package only). They run the real loop
 * on the package's seams: {@code TimeSource} (a simulated clock) and {@code TermLease} (what a term
 * does with its lease; a stub instead of {@link dev.retsu.lock.AdvisoryLockLease}). Integration
 * tests ({@code *IntegrationTest}, Failsafe) prove each invariant against PostgreSQL.
 */
package dev.retsu.lock;
