-- tasklatch PostgreSQL schema, version 18: the operator's list in creation order.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- The web console and `tasks ls` read every tenant's tasks newest first, a keyset page at a time
-- ((created_at_ms, task_id) below the last row seen). Without an index led by created_at_ms each
-- page sorted the whole table; with it a page reads its rows from the index, backwards, at any
-- depth. Filters on status, tool, tenant or app are checked on the rows it walks.
CREATE INDEX tasks_created ON tasks (created_at_ms, task_id);
