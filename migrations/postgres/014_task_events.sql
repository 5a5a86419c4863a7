-- tasklatch PostgreSQL schema, version 14: events sent into a task (ctx.step.waitForEvent).
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- One row per event sent to a task, numbered in send order per task (seq). payload is the
-- event's JSON text, kept as text so that it comes back exactly as sent; key the correlation key
-- it was sent by (NULL: sent by task id). consumed_at_ms and position are set together when a
-- wait takes the event: position is the journal position of that wait, so a run that took it and
-- stopped before recording the wait takes the same event again. The task's rows go with it.
CREATE TABLE task_events (
  task_id        text COLLATE "C" NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  seq            integer NOT NULL,
  type           text NOT NULL,
  payload        text NOT NULL,
  key            text,
  sent_at_ms     bigint NOT NULL,
  consumed_at_ms bigint,
  position       integer,
  CONSTRAINT task_events_pkey PRIMARY KEY (task_id, seq),
  CONSTRAINT task_events_consumed_check CHECK ((consumed_at_ms IS NULL) = (position IS NULL))
);

-- The pending events of a task by type, in send order: what a wait takes first.
CREATE INDEX task_events_pending_idx ON task_events (task_id, type, seq) WHERE consumed_at_ms IS NULL;
