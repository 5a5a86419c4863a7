-- tasklatch PostgreSQL schema, version 20: a task's concurrency key and limit, written once.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- Version 16 stored both as generated columns. PostgreSQL 15 computes a stored generated column
-- again on every UPDATE of the row, whatever the UPDATE sets, and each statement first rebuilds
-- both expressions from their stored text: every claim, status write, heartbeat and cancellation
-- paid for two columns that only admission can change. Measured on the task lifecycle (create,
-- run, complete, result at 16 requestors): about a tenth of PostgreSQL's CPU per task.
--
-- They are now plain columns, keeping every value they hold (no rewrite). Admission writes them
-- with the functions below, the one definition of each; an UPDATE that does not set the request
-- leaves them as they are, and nothing but seeding sets it.
--
-- Any other insert (seeding, or the admission of a process started before this version) names
-- neither column. A row trigger fills them in from the request then, only for a row whose
-- request carries a key and whose key column is empty: this version's admissions never call it.
-- A request set anew (seeding) sets them anew through a second trigger.
CREATE FUNCTION tasklatch_concurrency_key(request jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT request #>> '{params,_meta,io.tasklatch/concurrency,key}' $$;

CREATE FUNCTION tasklatch_concurrency_limit(request jsonb) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN jsonb_typeof(request #> '{params,_meta,io.tasklatch/concurrency,limit}') = 'number'
                     AND (request #> '{params,_meta,io.tasklatch/concurrency,limit}')::numeric BETWEEN 1 AND 1000000
                    THEN (request #> '{params,_meta,io.tasklatch/concurrency,limit}')::numeric::integer END $$;

ALTER TABLE tasks ALTER COLUMN concurrency_key DROP EXPRESSION;
ALTER TABLE tasks ALTER COLUMN concurrency_limit DROP EXPRESSION;

CREATE FUNCTION tasklatch_concurrency_filled() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  NEW.concurrency_key := tasklatch_concurrency_key(NEW.request);
  NEW.concurrency_limit := tasklatch_concurrency_limit(NEW.request);
  RETURN NEW;
END $$;

CREATE TRIGGER tasks_concurrency_inserted BEFORE INSERT ON tasks
  FOR EACH ROW WHEN (NEW.concurrency_key IS NULL AND NEW.request #> '{params,_meta,io.tasklatch/concurrency}' IS NOT NULL)
  EXECUTE FUNCTION tasklatch_concurrency_filled();
CREATE TRIGGER tasks_concurrency_requested BEFORE UPDATE OF request ON tasks
  FOR EACH ROW EXECUTE FUNCTION tasklatch_concurrency_filled();
