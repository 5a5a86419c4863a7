-- tasklatch schema for SQLite, version 11: the read audit's rows stored in the order they began.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- Each poll adds to its caller's row of the hour, and the audit writer upserts the rows of a few
-- tens of milliseconds together. Keyed by task id (a random UUID), those rows lay on as many
-- pages as there were rows, and every page an upsert touches is written again to the WAL: at
-- 8,000 tasks polled once a second, 160 rows a batch on ~130 pages, ~14 µs a row. Clients poll
-- on a steady interval, so the rows of one batch are the rows of the batch an interval earlier,
-- first written together: stored by rowid, in the order they began, they share a few pages
-- (~6 µs a row). The key is a unique index, which an upsert reads but, the key never changing,
-- does not write.
CREATE TABLE task_read_audit_by_arrival (
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
  detail          TEXT
);
INSERT INTO task_read_audit_by_arrival
  SELECT task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms,
         task_id, correlation_id, status, version, detail
    FROM task_read_audit ORDER BY first_at_ms;
DROP TABLE task_read_audit;
ALTER TABLE task_read_audit_by_arrival RENAME TO task_read_audit;
-- The upsert's conflict target; it leads with task_key, so a task's trail and its removal read it by index.
CREATE UNIQUE INDEX task_read_audit_key ON task_read_audit (task_key, auth_key, surface, decision, window_start_ms);
CREATE INDEX task_read_audit_window_idx ON task_read_audit (window_start_ms);
