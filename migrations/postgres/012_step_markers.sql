-- tasklatch PostgreSQL schema, version 12: patch markers, woken sleeps and concurrent steps in
-- a task's journal.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- kind 'patch': the marker a run records where its handler reaches ctx.step.patched(id) fresh
-- (name = the gate's id, status 'completed'). A marker's name lives in a namespace of its own, so
-- a gate may carry a step's name: the unique name key becomes (task_id, kind = 'patch', name).
-- kinds 'event' and 'child', status 'waiting': a wait for an event sent to the task, and a
-- child task it started, while they are pending (their rows say how they ended).
-- status 'woke': a sleep a run has passed (its wake time kept); the waiting index and the
-- sleeping gauge still count only 'sleeping' and 'retrying'.
-- concurrent: the step was in flight together with another step of its run; the order check
-- of a later run skips such rows.
ALTER TABLE task_steps ADD COLUMN concurrent boolean NOT NULL DEFAULT false;

ALTER TABLE task_steps DROP CONSTRAINT task_steps_kind_check;
ALTER TABLE task_steps ADD CONSTRAINT task_steps_kind_check CHECK (kind IN ('do', 'sleep', 'patch', 'event', 'child'));
ALTER TABLE task_steps DROP CONSTRAINT task_steps_status_check;
ALTER TABLE task_steps ADD CONSTRAINT task_steps_status_check CHECK (status IN ('completed', 'failed', 'retrying', 'sleeping', 'woke', 'waiting'));

ALTER TABLE task_steps DROP CONSTRAINT task_steps_name_key;
CREATE UNIQUE INDEX task_steps_name_key ON task_steps (task_id, (kind = 'patch'), name);
