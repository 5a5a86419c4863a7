-- tasklatch PostgreSQL schema, version 5: the questions a running task asks its requestor.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- The primary key is what makes a key unique for the task's lifetime; it also leads with
-- task_id, so the ON DELETE CASCADE of the sweeper finds a task's questions through it.
-- input_ordinal is the question's place among its task's questions in the order they were
-- asked (an ask's questions in the order given), which (ask_seq, input_key) alone cannot keep.
CREATE TABLE task_inputs (
  task_id         text COLLATE "C" NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  input_key       text NOT NULL,
  ask_seq         integer NOT NULL,
  input_ordinal   integer NOT NULL,
  request         jsonb NOT NULL,
  request_digest  text NOT NULL,
  asked_at_ms     bigint NOT NULL,
  -- NULL while the question is outstanding; answered_at_ms says whether it was answered (an
  -- answer may be JSON null).
  response        jsonb,
  response_digest text,
  answered_at_ms  bigint,
  -- Past it, the question unanswered ends its task failed; NULL: no deadline of its own.
  deadline_ms     bigint,
  CONSTRAINT task_inputs_pkey PRIMARY KEY (task_id, input_key)
);

-- What the deadline pass looks for: outstanding questions that have a deadline, by deadline.
CREATE INDEX task_inputs_deadline_idx ON task_inputs (deadline_ms) WHERE answered_at_ms IS NULL AND deadline_ms IS NOT NULL;
