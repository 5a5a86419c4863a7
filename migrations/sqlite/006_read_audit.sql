-- tasklatch schema for SQLite, version 6: aggregated read audit, and retention.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- Decisions made outside a store write (reads, lists, refusals, misses) are counted, not
-- appended: one row per (task, auth key, surface, decision, hour), which the audit writer
-- upserts (src/store/read-audit.ts). task_key is '' when the decision named no stored task (a
-- miss, a refusal before the lookup, a list), so a caller spraying ids adds one row per hour;
-- task_id is the id the latest decision named. No foreign key: a miss names no task, and the
-- sweeper removes a task's rows with it.
CREATE TABLE task_read_audit (
  task_key        TEXT NOT NULL,
  auth_key        TEXT NOT NULL,
  surface         TEXT NOT NULL,
  decision        TEXT NOT NULL,
  window_start_ms INTEGER NOT NULL,
  count           INTEGER NOT NULL,
  first_at_ms     INTEGER NOT NULL,
  last_at_ms      INTEGER NOT NULL,
  task_id         TEXT,
  correlation_id  TEXT NOT NULL,
  status          TEXT,
  version         INTEGER,
  detail          TEXT,
  -- The upsert's conflict target; it also leads with task_key, so a task's trail and its
  -- removal read it by index.
  PRIMARY KEY (task_key, auth_key, surface, decision, window_start_ms)
) WITHOUT ROWID;

-- The retention pass removes rows that outlived their task (or named none) by age.
CREATE INDEX task_read_audit_last_idx ON task_read_audit (last_at_ms);
CREATE INDEX task_audit_at_idx ON task_audit (at_ms);

-- The retention pass finds finished tasks without a ttl by their last update (those with one
-- it finds by tasks_expires_idx).
CREATE INDEX tasks_finished_idx ON tasks (last_updated_at_ms)
  WHERE expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled');
