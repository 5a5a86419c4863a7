-- tasklatch PostgreSQL schema, version 6: which application admitted a task, and the digest of
-- its tool's definition then. Applied by migratePostgres inside its transaction: no BEGIN/COMMIT.
--
-- A tool name means one tool within one application only; two applications on one schema may
-- both have a `build_report`. Tasks stored before this migration belong to the app 'default',
-- the app of a runtime that names none, so existing deployments keep claiming them. A constant
-- default is stored once in the catalog (PostgreSQL 11+): no table rewrite, however many rows.
ALTER TABLE tasks ADD COLUMN app text NOT NULL DEFAULT 'default';
ALTER TABLE tasks ADD COLUMN tool_digest text;

-- The claim filters by app in its locking read. Carried on the outbox entry (set from the task
-- at admission, never changed), so the walk reads only its own app's entries in dispatch order
-- through the index below, instead of reading, joining and dropping every other app's due
-- entries ahead of its own.
ALTER TABLE task_outbox ADD COLUMN app text NOT NULL DEFAULT 'default';

-- Replaces task_outbox_dispatch: every worker claims with its app, so the app leads the key.
-- Partial like the old one: closed entries, most of the table, are never walked.
CREATE INDEX task_outbox_app_dispatch ON task_outbox (app, available_at_ms, id) WHERE done_at_ms IS NULL;
DROP INDEX task_outbox_dispatch;
