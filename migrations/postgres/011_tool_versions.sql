-- tasklatch PostgreSQL schema, version 11: the version of a task's tool, and the versions live
-- workers run. Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- A task records its tool's version at admission and keeps it; tasks stored before this
-- migration have none, and any worker of their tool may run them (src/core/version-rules.ts).
-- A nullable column without a default: no table rewrite, however many rows.
ALTER TABLE tasks ADD COLUMN tool_version text;

-- One row per (app, tool, version, worker): written when a worker starts, renewed by its
-- heartbeat (last_seen_ms), removed when it stops cleanly. A worker that stops renewing counts
-- as gone after a bounded silence, and a later announcement of its app removes its rows. A few
-- rows per live worker: claimers read the whole app's rows at each renewal.
CREATE TABLE worker_versions (
  app           text   NOT NULL,
  tool_name     text   NOT NULL,
  version       text   NOT NULL,
  worker_id     text   NOT NULL,
  first_seen_ms bigint NOT NULL,
  last_seen_ms  bigint NOT NULL,
  PRIMARY KEY (app, tool_name, version, worker_id)
);
