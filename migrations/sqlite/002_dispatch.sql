-- tasklatch schema for SQLite, version 2: dispatch (claim, heartbeat, release).
-- Applied by migrateSqlite inside one BEGIN IMMEDIATE transaction: no BEGIN/COMMIT here.
--
-- The claim walk needs nothing new: task_outbox_available_idx holds (available_at_ms, id) in
-- order, because id is the rowid every index entry ends with, so ORDER BY available_at_ms, id
-- reads it without a sort. What did scan was every lookup by task: closing an entry on a
-- terminal transition or cancel, a heartbeat or release moving it, and the ON DELETE CASCADE of
-- sweepExpired (SQLite does not index a foreign key's child column by itself).
CREATE INDEX task_outbox_task_idx ON task_outbox (task_id);
