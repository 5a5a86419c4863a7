-- tasklatch PostgreSQL schema, version 2: dispatch (claim, heartbeat, release).
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- A claim walks the open outbox in (available_at_ms, id) order with a keyset and LIMIT, under
-- FOR UPDATE SKIP LOCKED. An index on available_at_ms alone makes every walk sort all entries
-- due at the same instant (a burst of admissions in one millisecond); with id in the key the
-- walk reads the first rows of the index and stops. The old index is a prefix of this one, so
-- it only cost writes. Partial: closed entries, most of the table, are never walked. Built
-- without CONCURRENTLY (migrations run in a transaction); it holds open entries only, so the
-- build is short even on a large outbox.
CREATE INDEX task_outbox_dispatch ON task_outbox (available_at_ms, id) WHERE done_at_ms IS NULL;
DROP INDEX task_outbox_pending;
