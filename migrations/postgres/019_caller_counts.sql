-- tasklatch PostgreSQL schema, version 19: each caller's stored rows, counted as they are written.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- An admission under the stored-task bound (maxStoredTasks, 1000 by default) counted the caller's
-- unexpired tasks, every one of them a heap fetch: the admission of a caller with 900 stored
-- tasks read 900 rows. task_caller_counts holds, per auth key, how many rows tasks has for it,
-- expired or not. That number is never below the bound's count, so while it is below the bound
-- the admission needs no count; at or above it, the admission counts as before.
--
-- Triggers keep the number, whoever writes: an insert adds its rows, a delete takes its rows off,
-- a row moved to another auth key moves its one. Inserts and deletes are counted once per
-- statement, grouped by auth key: a statement of a million rows for three callers changes three
-- counts once each. Each change is in the transaction of the write, so a snapshot that sees a
-- task row sees it counted, and one that does not, does not. An auth key whose rows are all gone
-- loses its count row.
--
-- Lock order: every statement locks the count rows it touches in auth-key order, and a write
-- batch runs its admissions in auth-key order, so two writers do not wait on each other in a
-- cycle (PostgreSQL would break one that did, and the writes would run again).
--
-- The functions keep the search_path they were made with: a write to this schema's tasks made
-- under another search_path still counts here.
--
-- CREATE TRIGGER locks tasks against writes until this migration commits: the count below is of
-- every row, and no write slips between it and the triggers. It reads the whole table with
-- writes waiting: on a large table, migrate at a quiet time.
CREATE TABLE task_caller_counts (
  auth_key text COLLATE "C" PRIMARY KEY,
  stored   bigint NOT NULL CHECK (stored > 0)
);

CREATE FUNCTION tasklatch_count_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO task_caller_counts (auth_key, stored)
  SELECT auth_key, count(*) FROM added GROUP BY auth_key ORDER BY auth_key
  ON CONFLICT (auth_key) DO UPDATE SET stored = task_caller_counts.stored + EXCLUDED.stored;
  RETURN NULL;
END $$;

CREATE FUNCTION tasklatch_count_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM 1 FROM task_caller_counts c WHERE c.auth_key IN (SELECT auth_key FROM removed) ORDER BY c.auth_key FOR UPDATE;
  UPDATE task_caller_counts c SET stored = c.stored - r.n
    FROM (SELECT auth_key, count(*) AS n FROM removed GROUP BY auth_key) r
   WHERE c.auth_key = r.auth_key AND c.stored > r.n;
  DELETE FROM task_caller_counts c USING (SELECT auth_key, count(*) AS n FROM removed GROUP BY auth_key) r
   WHERE c.auth_key = r.auth_key AND c.stored <= r.n;
  RETURN NULL;
END $$;

CREATE FUNCTION tasklatch_count_moved() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM 1 FROM task_caller_counts c WHERE c.auth_key IN (OLD.auth_key, NEW.auth_key) ORDER BY c.auth_key FOR UPDATE;
  DELETE FROM task_caller_counts WHERE auth_key = OLD.auth_key AND stored <= 1;
  UPDATE task_caller_counts SET stored = stored - 1 WHERE auth_key = OLD.auth_key;
  INSERT INTO task_caller_counts (auth_key, stored) VALUES (NEW.auth_key, 1)
  ON CONFLICT (auth_key) DO UPDATE SET stored = task_caller_counts.stored + 1;
  RETURN NULL;
END $$;

CREATE FUNCTION tasklatch_count_truncated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM task_caller_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER tasks_count_inserted AFTER INSERT ON tasks
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION tasklatch_count_inserted();
CREATE TRIGGER tasks_count_deleted AFTER DELETE ON tasks
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION tasklatch_count_deleted();
CREATE TRIGGER tasks_count_moved AFTER UPDATE OF auth_key ON tasks
  FOR EACH ROW WHEN (OLD.auth_key IS DISTINCT FROM NEW.auth_key) EXECUTE FUNCTION tasklatch_count_moved();
CREATE TRIGGER tasks_count_truncated AFTER TRUNCATE ON tasks
  FOR EACH STATEMENT EXECUTE FUNCTION tasklatch_count_truncated();

INSERT INTO task_caller_counts (auth_key, stored) SELECT auth_key, count(*) FROM tasks GROUP BY auth_key;
