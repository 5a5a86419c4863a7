-- tasklatch schema for SQLite, version 9: the read audit's age index on its window, not its last read.
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- Every poll adds to its caller's row of the hour (count, last_at_ms); with last_at_ms indexed,
-- each such update also rewrote an index entry. window_start_ms is fixed for the row's life; the
-- retention pass finds old rows by window and still checks last_at_ms.
DROP INDEX task_read_audit_last_idx;
CREATE INDEX task_read_audit_window_idx ON task_read_audit (window_start_ms);
