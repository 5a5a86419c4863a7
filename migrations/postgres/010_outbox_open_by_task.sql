-- tasklatch PostgreSQL schema, version 10: a task's open outbox entry found by its task id.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- A terminal write or a cancellation closes its task's open entry (task_id = $1 AND done_at_ms
-- IS NULL). A connection keeps the plan it chose for that statement while the outbox was small,
-- and on an empty schema the planner took task_outbox_app_dispatch (every open entry) over
-- task_outbox_task (the task's entries) for it: where autovacuum never analyzes the table,
-- every such write then read every open entry, however many tasks were running. With the
-- closing column in the key both conditions are index conditions, and the plan is the task's
-- own entry whatever the table's size. The cascade from a swept task uses the same index (its
-- leading column), which replaces task_outbox_task.
CREATE INDEX task_outbox_task_open ON task_outbox (task_id, done_at_ms);
DROP INDEX task_outbox_task;
