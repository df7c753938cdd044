/**
 * retsu-lock core: leader election on PostgreSQL session advisory locks. Exports the API package
 * only; {@code dev.retsu.lock.internal} stays inside the module. pgjdbc is optional ({@code
 * requires static}): when the driver is on the module path (it is resolved as the provider of
 * {@code java.sql.Driver}), the loop waits on the leader session's socket and reads it without a
 * round trip; without it every check is a round trip. pgjdbc has no module descriptor, only the
 * automatic name {@code org.postgresql.jdbc}, which it has kept stable since 42.2: hence the one
 * suppressed warning.
 */
@SuppressWarnings("requires-automatic")
module dev.retsu.lock {
  requires transitive java.sql;
  requires java.management;
  requires jdk.net; // client keepalive options on a waiting standby's socket
  requires org.slf4j;
  requires static org.postgresql.jdbc;

  exports dev.retsu.lock;
}
