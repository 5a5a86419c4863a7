-- tasklatch PostgreSQL schema, version 16: concurrency keys.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- A task of a tool with a concurrency limit carries its key and the limit in its stored request
-- (`_meta` "io.tasklatch/concurrency", written by admission only; concurrency-rules.ts). These
-- columns read them out of the request, so that a claim counts the running tasks of a key
-- through an index; NULL for a task of no key. Generated: an insert names no new column, and
-- the two can never disagree with the request. (Adding a stored column rewrites the table once.)
ALTER TABLE tasks ADD COLUMN concurrency_key text
  GENERATED ALWAYS AS (request #>> '{params,_meta,io.tasklatch/concurrency,key}') STORED;
ALTER TABLE tasks ADD COLUMN concurrency_limit integer
  GENERATED ALWAYS AS (
    CASE WHEN jsonb_typeof(request #> '{params,_meta,io.tasklatch/concurrency,limit}') = 'number'
          AND (request #> '{params,_meta,io.tasklatch/concurrency,limit}')::numeric BETWEEN 1 AND 1000000
         THEN (request #> '{params,_meta,io.tasklatch/concurrency,limit}')::numeric::integer END
  ) STORED;

-- A claim counts the leased, working tasks of one key of one tool of one app.
CREATE INDEX tasks_concurrency ON tasks (app, tool_name, concurrency_key, lease_expires_at_ms) WHERE concurrency_key IS NOT NULL;
