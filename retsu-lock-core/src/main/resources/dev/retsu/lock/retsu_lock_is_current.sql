-- Optional: retsu_lock_is_current(key, token), the SQL fencing check as a function.
-- Nothing installs it for you; run it once per database (a role that may CREATE FUNCTION in the
-- schema), or use FencingSql.isCurrent(key, token), which needs nothing installed.
-- True when the session that holds the advisory lock `key` in this database shows the fencing
-- token `token` ('<timeline>/<xid>') in its application_name: the term that took that token still
-- holds the key. A stale token (its leader's session ended, another term took the key) is false.
CREATE OR REPLACE FUNCTION retsu_lock_is_current(key bigint, token text)
RETURNS boolean LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog
AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock'
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                        WHERE d.datname = pg_catalog.current_database())
      AND l.objsubid = 1
      AND l.classid = ((key >> 32) & 4294967295)::oid
      AND l.objid = (key & 4294967295)::oid
      AND pg_catalog.right(a.application_name, pg_catalog.length(token) + 1) = '#' || token)
$$;

CREATE OR REPLACE FUNCTION retsu_lock_is_current(first integer, second integer, token text)
RETURNS boolean LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog
AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock'
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                        WHERE d.datname = pg_catalog.current_database())
      AND l.objsubid = 2
      AND l.classid = first::oid
      AND l.objid = second::oid
      AND pg_catalog.right(a.application_name, pg_catalog.length(token) + 1) = '#' || token)
$$;
