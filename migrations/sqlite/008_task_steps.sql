-- tasklatch schema for SQLite, version 8: a task's journal of durable steps and sleeps.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- One row per position of a task's journal (steps, sleeps and asks share one counter per run);
-- a name is unique within its task. The primary key leads with task_id, so the ON DELETE
-- CASCADE of sweepExpired finds a task's steps without a scan. value is the completed step's
-- JSON text (NULL: a step run for its side effect); error the JSON of the last failure
-- ({ message, name }); wake_at_ms when a sleeping or retrying task is due again.
CREATE TABLE task_steps (
  task_id       TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  position      INTEGER NOT NULL,
  name          TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('do', 'sleep')),
  status        TEXT NOT NULL CHECK (status IN ('completed', 'failed', 'retrying', 'sleeping')),
  attempts      INTEGER NOT NULL,
  value         TEXT,
  error         TEXT,
  value_bytes   INTEGER NOT NULL DEFAULT 0,
  wake_at_ms    INTEGER,
  started_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (task_id, position),
  UNIQUE (task_id, name)
);

-- The waits still pending (the sleeping-tasks gauge counts them).
CREATE INDEX task_steps_waiting_idx ON task_steps (wake_at_ms) WHERE status IN ('sleeping', 'retrying');

-- An ask's place in the same journal order; NULL for questions asked before steps were.
ALTER TABLE task_inputs ADD COLUMN position INTEGER;
