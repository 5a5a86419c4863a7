-- The active-task limit counts a caller's non-terminal tasks at every admission. This index holds
-- only those rows, so the count reads the caller's open tasks, not its whole history.
CREATE INDEX tasks_active_by_auth ON tasks (auth_key) WHERE status IN ('working', 'input_required');
