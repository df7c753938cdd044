/**
 * Leader election on PostgreSQL session advisory locks.
 *
 * <h2>Where to start</h2>
 *
 * <ul>
 *   <li>{@link dev.retsu.lock.LeaderLoop}: what services call. Build it with {@link
 *       dev.retsu.lock.LeaderLoop#builder}, run a {@link dev.retsu.lock.LeaderTask}, check {@link
 *       dev.retsu.lock.LeaderContext#ensureLeader()} before every effect.
 *   <li>{@link dev.retsu.lock.LeaderGroup}: many keys per process (shards, tenants), spread fairly
 *       over the members, each key with its own terms, over a few sessions.
 *   <li>{@link dev.retsu.lock.AdvisoryLock} and {@link dev.retsu.lock.AdvisoryLockLease}: one lock
 *       taken by hand, when you do not need a loop.
 *   <li>{@link dev.retsu.lock.LockKey}: where candidates meet.
 *   <li>{@link dev.retsu.lock.LeaderListener}: what metrics and logs hear.
 * </ul>
 *
 * <p>This package holds only what users call or receive. The engine beneath both recipes lives in
 * {@code dev.retsu.lock.internal.*}, which the module does not export: {@code internal.session}
 * (the backend we own: opening and refusing it, its SQL, its guarded views, its proofs, its end),
 * {@code internal.term} (one key's term, the listener rules, the schedule on one session and the
 * end order, the watchdog), {@code internal.loop} and {@code internal.group} (what each recipe adds
 * on top). Each invariant of the design has one home there; {@code docs/internals.md} maps each to
 * its type and the test that proves it against a real PostgreSQL.
 */
package dev.retsu.lock;
