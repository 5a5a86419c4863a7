-- tasklatch schema for SQLite, version 10: one covering index for the admission bounds.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- An admission under bounds counts the caller's stored (unexpired) tasks and, of those, its
-- active ones. With (auth_key, expires_at_ms, status) in one index the count reads index entries
-- only; through tasks_active_by_auth or the listing index it looked up each row in the table.
-- The partial index it replaces served only that count.
DROP INDEX tasks_active_by_auth;
CREATE INDEX tasks_held_by_auth ON tasks (auth_key, expires_at_ms, status);
