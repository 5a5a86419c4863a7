-- tasklatch schema for SQLite, version 5: which application admitted a task, and the digest of
-- its tool's definition then. Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction.
--
-- A tool name means one tool within one application only. Tasks stored before this migration
-- belong to the app 'default', the app of a runtime that names none, so existing files keep
-- working. The claim walk reads each due entry's task already (under the file's write lock) and
-- skips another app's there, so the outbox needs no column of its own.
ALTER TABLE tasks ADD COLUMN app TEXT NOT NULL DEFAULT 'default';
ALTER TABLE tasks ADD COLUMN tool_digest TEXT;
