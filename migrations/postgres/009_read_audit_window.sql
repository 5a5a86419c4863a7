-- tasklatch PostgreSQL schema, version 9: the read audit's age index on its window, not its last read.
-- Applied by migratePostgres inside its transaction: no BEGIN/COMMIT here.
--
-- Every poll adds to its caller's row of the hour (count, last_at_ms). With last_at_ms indexed,
-- each of those updates wrote a new entry into both indexes and could not be a heap-only (HOT)
-- update, so a row polled at 1 Hz left ~3,600 dead versions an hour for VACUUM. Indexed on
-- window_start_ms (fixed for the row's life) no indexed column changes on an update: it stays
-- on its page, and the page prunes its own dead versions. The fill factor leaves room on each
-- page for those in-page updates. The retention pass finds old rows by window and still checks
-- last_at_ms.
DROP INDEX task_read_audit_last;
CREATE INDEX task_read_audit_window ON task_read_audit (window_start_ms);
ALTER TABLE task_read_audit SET (fillfactor = 50);
