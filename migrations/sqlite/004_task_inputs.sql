-- tasklatch schema for SQLite, version 4: the questions a running task asks its requestor.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- The primary key is what makes a key unique for the task's lifetime; it also leads with
-- task_id, so the ON DELETE CASCADE of sweepExpired finds a task's questions without a scan.
-- input_ordinal is the question's place among its task's questions in the order they were
-- asked (an ask's questions in the order given), which (ask_seq, input_key) alone cannot keep.
CREATE TABLE task_inputs (
  task_id         TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  input_key       TEXT NOT NULL,
  ask_seq         INTEGER NOT NULL,
  input_ordinal   INTEGER NOT NULL,
  request         TEXT NOT NULL,
  request_digest  TEXT NOT NULL,
  asked_at_ms     INTEGER NOT NULL,
  -- NULL while the question is outstanding; answered_at_ms says whether it was answered (an
  -- answer may be JSON null).
  response        TEXT,
  response_digest TEXT,
  answered_at_ms  INTEGER,
  -- Past it, the question unanswered ends its task failed; NULL: no deadline of its own.
  deadline_ms     INTEGER,
  PRIMARY KEY (task_id, input_key)
);

-- What the deadline pass looks for: outstanding questions that have a deadline, by deadline.
CREATE INDEX task_inputs_deadline_idx ON task_inputs (deadline_ms) WHERE answered_at_ms IS NULL AND deadline_ms IS NOT NULL;
