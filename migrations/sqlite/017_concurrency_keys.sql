-- tasklatch schema for SQLite, version 17: concurrency keys.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- A task of a tool with a concurrency limit carries its key and the limit in its stored request
-- (`_meta` "io.tasklatch/concurrency", written by admission only; concurrency-rules.ts). These
-- columns read them out of the request, so that a claim counts the running tasks of a key
-- through an index; NULL for a task of no key. Virtual: nothing is written twice, and an
-- insert names no new column.
ALTER TABLE tasks ADD COLUMN concurrency_key TEXT
  GENERATED ALWAYS AS (json_extract(request, '$.params._meta."io.tasklatch/concurrency".key')) VIRTUAL;
ALTER TABLE tasks ADD COLUMN concurrency_limit INTEGER
  GENERATED ALWAYS AS (json_extract(request, '$.params._meta."io.tasklatch/concurrency".limit')) VIRTUAL;

-- A claim counts the leased, working tasks of one key of one tool of one app.
CREATE INDEX tasks_concurrency ON tasks (app, tool_name, concurrency_key, lease_expires_at_ms) WHERE concurrency_key IS NOT NULL;
