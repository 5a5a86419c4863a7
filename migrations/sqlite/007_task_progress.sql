-- tasklatch schema for SQLite, version 7: running tasks' progress on its way to other processes.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- SQLite has no NOTIFY: a process writes its tasks' progress here (coalesced per task, see
-- ProgressBuffer) and every listener of the file reads the rows written since its last poll, as
-- it reads the audit lines of changes. Progress is best effort and never a fact of the task:
-- the writer keeps only the latest few hundred rows, so the table stays small whatever runs,
-- and a listener that falls further behind loses the oldest. The id only grows (the newest row
-- is never deleted), so "after the last id seen" is a complete read.
CREATE TABLE task_progress (
  id      INTEGER PRIMARY KEY,
  -- The event as encodeProgress wrote it (JSON: task id, version, progress, total, message, origin).
  payload TEXT NOT NULL
);
