-- tasklatch PostgreSQL schema, version 8: a task's journal of durable steps and sleeps.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- One row per position of a task's journal (steps, sleeps and asks share one counter per run);
-- a name is unique within its task. The primary key leads with task_id, so the ON DELETE
-- CASCADE of the sweeper finds a task's steps through it. value is the completed step's JSON
-- text (NULL: a step run for its side effect), kept as text and not jsonb so that it comes back
-- exactly as written; error the JSON of the last failure ({ message, name }); wake_at_ms when a
-- sleeping or retrying task is due again.
CREATE TABLE task_steps (
  task_id       text COLLATE "C" NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  position      integer NOT NULL,
  name          text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('do', 'sleep')),
  status        text NOT NULL CHECK (status IN ('completed', 'failed', 'retrying', 'sleeping')),
  attempts      integer NOT NULL,
  value         text,
  error         text,
  value_bytes   integer NOT NULL DEFAULT 0,
  wake_at_ms    bigint,
  started_at_ms bigint NOT NULL,
  updated_at_ms bigint NOT NULL,
  CONSTRAINT task_steps_pkey PRIMARY KEY (task_id, position),
  CONSTRAINT task_steps_name_key UNIQUE (task_id, name)
);

-- The waits still pending (the sleeping-tasks gauge counts them).
CREATE INDEX task_steps_waiting_idx ON task_steps (wake_at_ms) WHERE status IN ('sleeping', 'retrying');

-- An ask's place in the same journal order; NULL for questions asked before steps were.
ALTER TABLE task_inputs ADD COLUMN position integer;
