-- Optional: retsu_lock_is_current(key, token), the SQL fencing check as a function.
-- Nothing installs it for you; run it once per database (a role that may CREATE FUNCTION in the
-- schema), or use FencingSql.isCurrent(key, token), which needs nothing installed.
-- True when the session that holds the advisory lock `key` in this database shows the fencing
-- token `token` (its comparable form, e.g. 'A1I704643112E12059') in its application_name and is of the candidates' role: the
-- term that took that token still holds the key. A stale token (its leader's session ended,
-- another term took the key) is false. A session names itself, so any role could show a leader's
-- token; the role a session logged in as is recorded by the server. retsu_lock_is_current takes
-- the candidates' role to be the calling session's own login role (SESSION_USER: a leader's write
-- runs as the candidates' role); retsu_lock_is_current_for_role names it, for writes made under
-- another role.
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
      AND pg_catalog.right(a.application_name, pg_catalog.length(token) + 1) = '#' || token
      AND a.usesysid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = SESSION_USER))
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
      AND pg_catalog.right(a.application_name, pg_catalog.length(token) + 1) = '#' || token
      AND a.usesysid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = SESSION_USER))
$$;

CREATE OR REPLACE FUNCTION retsu_lock_is_current_for_role(key bigint, token text,
    candidate_role text)
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
      AND pg_catalog.right(a.application_name, pg_catalog.length(token) + 1) = '#' || token
      AND a.usesysid = (SELECT r.oid FROM pg_catalog.pg_roles r
                        WHERE r.rolname::text = candidate_role))
$$;

CREATE OR REPLACE FUNCTION retsu_lock_is_current_for_role(first integer, second integer,
    token text, candidate_role text)
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
      AND pg_catalog.right(a.application_name, pg_catalog.length(token) + 1) = '#' || token
      AND a.usesysid = (SELECT r.oid FROM pg_catalog.pg_roles r
                        WHERE r.rolname::text = candidate_role))
$$;
