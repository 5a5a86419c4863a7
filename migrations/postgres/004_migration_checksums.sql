-- The ledger keeps the SHA-256 of each applied file, so a file whose text changed after it was
-- applied is refused (SCHEMA_MISMATCH), as SQLite's ledger always did. Nullable: rows recorded
-- before this migration get their checksum on the next run, from the file texts this code ships.
ALTER TABLE tasklatch_migrations ADD COLUMN IF NOT EXISTS checksum text;
