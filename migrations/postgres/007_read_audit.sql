-- tasklatch PostgreSQL schema, version 7: aggregated read audit, and retention.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- Decisions made outside a store write (reads, lists, refusals, misses) are counted, not
-- appended: one row per (task, auth key, surface, decision, hour), which the audit writer
-- upserts, one statement per batch (src/store/read-audit.ts). task_key is '' when the decision
-- named no stored task (a miss, a refusal before the lookup, a list), so a caller spraying ids
-- adds one row per hour; task_id is the id the latest decision named. No foreign key: a miss
-- names no task, and the sweeper removes a task's rows with it. task_key is COLLATE "C" as
-- tasks.task_id is, so the sweeper's join on it uses this key's index.
CREATE TABLE task_read_audit (
  task_key        text COLLATE "C" NOT NULL,
  auth_key        text NOT NULL,
  surface         text NOT NULL,
  decision        text NOT NULL,
  window_start_ms bigint NOT NULL,
  count           bigint NOT NULL,
  first_at_ms     bigint NOT NULL,
  last_at_ms      bigint NOT NULL,
  task_id         text,
  correlation_id  text NOT NULL,
  status          text,
  version         integer,
  detail          text,
  CONSTRAINT task_read_audit_pkey PRIMARY KEY (task_key, auth_key, surface, decision, window_start_ms)
);

-- The retention pass removes rows that outlived their task (or named none) by age. Built
-- without CONCURRENTLY (migrations run in a transaction): on a large trail, migrate at a quiet time.
CREATE INDEX task_read_audit_last ON task_read_audit (last_at_ms);
CREATE INDEX task_audit_at ON task_audit (at_ms);

-- The retention pass finds finished tasks without a ttl by their last update (those with one
-- it finds by tasks_expiry).
CREATE INDEX tasks_finished ON tasks (last_updated_at_ms)
  WHERE expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled');
