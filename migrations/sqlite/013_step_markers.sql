-- tasklatch schema for SQLite, version 13: patch markers, woken sleeps and concurrent steps in
-- a task's journal.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- kind 'patch': the marker a run records where its handler reaches ctx.step.patched(id) fresh
-- (name = the gate's id, status 'completed'). A marker's name lives in a namespace of its own, so
-- a gate may carry a step's name: the unique name key becomes (task_id, kind = 'patch', name).
-- kinds 'event' and 'child', status 'waiting': a wait for an event sent to the task, and a
-- child task it started, while they are pending (their rows say how they ended).
-- status 'woke': a sleep a run has passed (its wake time kept); the waiting index and the
-- sleeping gauge still count only 'sleeping' and 'retrying'.
-- concurrent: the step was in flight together with another step of its run (0 or 1); the order
-- check of a later run skips such rows.
-- SQLite changes a CHECK only by rebuilding the table: the rows are copied, the old table
-- dropped, the new one renamed, and its indexes made again (the foreign key to tasks and its
-- ON DELETE CASCADE are the new table's own). Nothing references task_steps.
CREATE TABLE task_steps_next (
  task_id       TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  position      INTEGER NOT NULL,
  name          TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('do', 'sleep', 'patch', 'event', 'child')),
  status        TEXT NOT NULL CHECK (status IN ('completed', 'failed', 'retrying', 'sleeping', 'woke', 'waiting')),
  attempts      INTEGER NOT NULL,
  value         TEXT,
  error         TEXT,
  value_bytes   INTEGER NOT NULL DEFAULT 0,
  wake_at_ms    INTEGER,
  concurrent    INTEGER NOT NULL DEFAULT 0 CHECK (concurrent IN (0, 1)),
  started_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (task_id, position)
);

INSERT INTO task_steps_next (task_id, position, name, kind, status, attempts, value, error, value_bytes, wake_at_ms, concurrent, started_at_ms, updated_at_ms)
  SELECT task_id, position, name, kind, status, attempts, value, error, value_bytes, wake_at_ms, 0, started_at_ms, updated_at_ms FROM task_steps;

DROP TABLE task_steps;
ALTER TABLE task_steps_next RENAME TO task_steps;

CREATE UNIQUE INDEX task_steps_name_key ON task_steps (task_id, kind = 'patch', name);
-- The waits still pending (the sleeping-tasks gauge counts them).
CREATE INDEX task_steps_waiting_idx ON task_steps (wake_at_ms) WHERE status IN ('sleeping', 'retrying');
