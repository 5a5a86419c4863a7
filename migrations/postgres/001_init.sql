-- tasklatch PostgreSQL schema, version 1.
-- Times are epoch milliseconds (bigint, columns ending in _ms): the core compares numbers, and
-- the replay sets the clock from a packet, so the server's clock must never enter a decision.

-- The admission record of every task. task_id is COLLATE "C" so that list order (created_at_ms,
-- task_id) is code-point order, the order the core and the SQLite store use.
CREATE TABLE tasks (
  task_id             text COLLATE "C" PRIMARY KEY,
  auth_key            text NOT NULL,
  tool_name           text,
  status              text NOT NULL
                      CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
  status_message      text,
  version             integer NOT NULL,
  created_at_ms       bigint NOT NULL,
  last_updated_at_ms  bigint NOT NULL,
  ttl_ms              bigint,
  expires_at_ms       bigint,
  poll_interval_ms    integer,
  request_digest      text,
  idempotency_key     text,
  request             jsonb,
  cancel_requested    boolean NOT NULL DEFAULT false,
  result              jsonb,
  result_digest       text,
  correlation_id      text,
  attempt             integer NOT NULL DEFAULT 0,
  lease_owner         text,
  lease_expires_at_ms bigint,
  -- Concurrent duplicate admissions resolve here (INSERT ... ON CONFLICT), never by a read
  -- followed by a write. NULL keys are distinct, so tasks without a key never collide.
  CONSTRAINT tasks_idempotency_key UNIQUE (auth_key, idempotency_key)
);

-- tasks/list: keyset pagination in (created_at_ms, task_id) order within one auth key.
CREATE INDEX tasks_list_order ON tasks (auth_key, created_at_ms, task_id);

-- The sweeper only ever looks at records that can expire.
CREATE INDEX tasks_expiry ON tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;

-- Dispatch entries, written in the admission transaction. Rows go with their task.
CREATE TABLE task_outbox (
  id                  bigserial PRIMARY KEY,
  task_id             text COLLATE "C" NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  created_at_ms       bigint NOT NULL,
  available_at_ms     bigint NOT NULL,
  claimed_by          text,
  lease_expires_at_ms bigint,
  attempt             integer NOT NULL DEFAULT 0,
  done_at_ms          bigint
);

-- Workers claim the oldest available undone entries.
CREATE INDEX task_outbox_pending ON task_outbox (available_at_ms) WHERE done_at_ms IS NULL;

-- The cascade from a swept task finds its entries here instead of scanning the outbox.
CREATE INDEX task_outbox_task ON task_outbox (task_id);

-- The append-only audit trail. No foreign key: it outlives swept tasks, and blocked decisions
-- name task ids that never existed.
CREATE TABLE task_audit (
  id             bigserial PRIMARY KEY,
  at_ms          bigint,
  surface        text,
  decision       text,
  auth_key       text,
  task_id        text,
  correlation_id text,
  status         text,
  version        integer,
  detail         text
);

CREATE INDEX task_audit_task ON task_audit (task_id, id);

-- Store-wide settings; the migration runner inserts the shared `secret` (cursor signing).
CREATE TABLE tasklatch_meta (
  key   text PRIMARY KEY,
  value text NOT NULL
);
