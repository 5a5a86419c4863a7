-- tasklatch schema for SQLite, version 12: the version of a task's tool, and the versions live
-- workers run. Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- A task records its tool's version at admission and keeps it; tasks stored before this
-- migration have none, and any worker of their tool may run them (src/core/version-rules.ts).
ALTER TABLE tasks ADD COLUMN tool_version TEXT;

-- One row per (app, tool, version, worker): written when a worker starts, renewed by its
-- heartbeat (last_seen_ms), removed when it stops cleanly. A worker that stops renewing counts
-- as gone after a bounded silence, and a later announcement of its app removes its rows.
CREATE TABLE worker_versions (
  app           TEXT    NOT NULL,
  tool_name     TEXT    NOT NULL,
  version       TEXT    NOT NULL,
  worker_id     TEXT    NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms  INTEGER NOT NULL,
  PRIMARY KEY (app, tool_name, version, worker_id)
);
