-- tasklatch schema for SQLite, version 14: tasks parked by a journal mismatch.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- A run whose handler disagrees with its task's journal (a deploy changed the handler under a
-- task in flight) leaves the task working and due again later (park-rules.ts). parked_at_ms is
-- when the streak of parks began (NULL: not parked); parks how many parks in a row, which sets
-- the next wait. The next run that records a step, and any terminal write, clears the mark.
-- Neither column is part of a task's record as callers see it: operators read them.
ALTER TABLE tasks ADD COLUMN parked_at_ms INTEGER;
ALTER TABLE tasks ADD COLUMN parks INTEGER NOT NULL DEFAULT 0;

-- The parked-tasks gauge and `tasks ls --parked` read the few parked tasks only.
CREATE INDEX tasks_parked ON tasks (parked_at_ms) WHERE parked_at_ms IS NOT NULL;
