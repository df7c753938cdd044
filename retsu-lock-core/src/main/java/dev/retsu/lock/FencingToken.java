package dev.retsu.lock;

/**
 * A number that grows with every term on one PostgreSQL cluster, so systems a leader writes to can
 * reject a stale leader: accept a write only if its token is not smaller than the largest seen.
 *
 * <p>It is the pair (WAL timeline, transaction id) taken in the leader's own session right after
 * the lock is acquired. The transaction id comes from {@code pg_current_xact_id()}, one counter for
 * the whole cluster that is never reused; it is made durable before the term starts (a
 * transactional {@code pg_logical_emit_message} forces the commit to be flushed), so a server crash
 * cannot hand out the same or a smaller token again. The timeline grows on every promotion, which
 * keeps tokens ordered across a failover to a replica whose counter may lag. Point-in-time recovery
 * and dump/restore do reset the order.
 *
 * @param timeline the WAL timeline of the server when the term started
 * @param xid the 64-bit transaction id assigned to the term
 */
public record FencingToken(int timeline, long xid) implements Comparable<FencingToken> {

  /**
   * Orders by timeline, then transaction id.
   *
   * @param other another token
   * @return negative, zero or positive
   */
  @Override
  public int compareTo(FencingToken other) {
    int byTimeline = Integer.compare(timeline, other.timeline);
    return byTimeline != 0 ? byTimeline : Long.compare(xid, other.xid);
  }

  /**
   * Returns whether this token is strictly newer than another.
   *
   * @param other another token
   * @return true if this one comes later
   */
  public boolean isNewerThan(FencingToken other) {
    return compareTo(other) > 0;
  }

  /**
   * Shows {@code timeline/xid}, e.g. {@code 1/742}.
   *
   * @return the token for people
   */
  @Override
  public String toString() {
    return timeline + "/" + xid;
  }
}
