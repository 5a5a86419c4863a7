-- tasklatch schema for SQLite, version 1.
-- Times are integer epoch milliseconds (columns end in _ms); JSON is stored as TEXT.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.

CREATE TABLE tasks (
  task_id             TEXT PRIMARY KEY,
  auth_key            TEXT NOT NULL,
  tool_name           TEXT,
  status              TEXT NOT NULL
                      CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
  status_message      TEXT,
  version             INTEGER NOT NULL,
  created_at_ms       INTEGER NOT NULL,
  last_updated_at_ms  INTEGER NOT NULL,
  ttl_ms              INTEGER,
  expires_at_ms       INTEGER,
  poll_interval_ms    INTEGER,
  request_digest      TEXT,
  idempotency_key     TEXT,
  request             TEXT,
  cancel_requested    INTEGER NOT NULL DEFAULT 0,
  result              TEXT,
  result_digest       TEXT,
  correlation_id      TEXT,
  attempt             INTEGER NOT NULL DEFAULT 0,
  lease_owner         TEXT,
  lease_expires_at_ms INTEGER,
  -- The idempotency lookup; NULL keys never collide, so plain calls are unconstrained.
  UNIQUE (auth_key, idempotency_key)
);

-- tasks/list: keyset pagination in (created_at, task_id) order within one auth key.
CREATE INDEX tasks_auth_created_idx ON tasks (auth_key, created_at_ms, task_id);

-- sweepExpired walks only records that can expire.
CREATE INDEX tasks_expires_idx ON tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;

-- Written in the admit transaction, so work is dispatched exactly for the tasks that exist.
CREATE TABLE task_outbox (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id             TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  created_at_ms       INTEGER NOT NULL,
  available_at_ms     INTEGER NOT NULL,
  claimed_by          TEXT,
  lease_expires_at_ms INTEGER,
  attempt             INTEGER NOT NULL DEFAULT 0,
  done_at_ms          INTEGER
);

CREATE INDEX task_outbox_available_idx ON task_outbox (available_at_ms) WHERE done_at_ms IS NULL;

-- Append-only; no foreign key, so the trail outlives swept tasks.
CREATE TABLE task_audit (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms          INTEGER NOT NULL,
  surface        TEXT NOT NULL,
  decision       TEXT NOT NULL,
  auth_key       TEXT NOT NULL,
  task_id        TEXT,
  correlation_id TEXT NOT NULL,
  status         TEXT,
  version        INTEGER,
  detail         TEXT
);

CREATE INDEX task_audit_task_idx ON task_audit (task_id, id);

-- Store-wide values shared by every process (the cursor-signing secret).
CREATE TABLE tasklatch_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
