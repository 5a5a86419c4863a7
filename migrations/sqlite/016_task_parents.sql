-- tasklatch schema for SQLite, version 16: child tasks know their parent.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- parent_task_id: the task whose handler started this one (ctx.step.runTool); NULL for a task
-- of its own. A principal's tasks/list leaves children out (parent_task_id IS NULL); the parent's
-- cancel and `tasks show` find its children through the index. No foreign key: a parent removed by
-- retention leaves its children to their own retention.
ALTER TABLE tasks ADD COLUMN parent_task_id TEXT;

CREATE INDEX tasks_parent ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;
