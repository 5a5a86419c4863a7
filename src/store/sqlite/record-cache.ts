import type { SqliteDatabase, SqliteStatement } from './driver.js';
import type { TaskRow } from './row.js';

/**
 * Where the database file stood when a row was read: SQLite's `data_version` (it moves when any
 * other connection, in this process or another, commits) and this connection's own changed rows
 * (`total_changes()`, which counts every insert, update and delete made here, whatever code made
 * it), less those the store declared as not touching `tasks` (the read audit's upserts).
 */
export interface Stamp {
  version: number;
  changes: number;
}

/** At most this many rows are kept; the oldest read goes first. */
const DEFAULT_MAX_ROWS = 10_000;

/**
 * Task rows read by this connection, each answered again only while the file is exactly as it
 * was when the row was read. Every lookup first asks the file (one statement that starts its own
 * read snapshot, so it sees every commit acknowledged before the lookup began): if no other
 * connection committed and this one changed nothing of `tasks` since the row was read, a fresh
 * `SELECT` would return the same row, and the kept one is returned. Anything else (another
 * process's write, a write of this connection by any path, a rollback) makes every kept row
 * stale at once, and the next lookup reads the table.
 *
 * The stamp of a row is taken before the row is read: a commit landing between the two makes
 * the stamp older than the row, which can only cause one needless miss, never a stale answer.
 * Inside a transaction nothing is kept or answered: a row read there may be rolled back.
 */
export class RecordCache {
  private readonly rows = new Map<string, TaskRow>();
  /** The stamp every kept row was read at (they all go stale together). */
  private stampOfRows: Stamp | null = null;
  /** Rows changed by writes declared `outsideTasks`, subtracted from `total_changes()`. */
  private uncounted = 0;
  private readonly check: SqliteStatement;
  private readonly totalChanges: SqliteStatement;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly maxRows = DEFAULT_MAX_ROWS,
  ) {
    this.check = db.prepare('SELECT total_changes() AS changes, data_version AS version FROM pragma_data_version');
    this.totalChanges = db.prepare('SELECT total_changes() AS changes');
  }

  /** The file's stamp now, or null inside a transaction (nothing is kept or answered there). */
  stamp(): Stamp | null {
    if (this.db.inTransaction) return null;
    const { changes, version } = this.check.get() as Stamp;
    return { version, changes: changes - this.uncounted };
  }

  /** The row of `taskId` read at `stamp`, when nothing changed since; undefined otherwise. */
  get(taskId: string, stamp: Stamp | null): TaskRow | undefined {
    if (stamp === null || !this.current(stamp)) return undefined;
    return this.rows.get(taskId);
  }

  /** Keeps `row`, read after `stamp` was taken. */
  set(row: TaskRow, stamp: Stamp | null): void {
    if (stamp === null) return;
    if (!this.current(stamp)) {
      this.rows.clear();
      this.stampOfRows = stamp;
    }
    this.rows.delete(row.task_id);
    this.rows.set(row.task_id, row);
    if (this.rows.size > this.maxRows) this.rows.delete(this.rows.keys().next().value as string);
  }

  /**
   * Runs `write` without making the kept rows stale. The caller vouches that it changes no row
   * of `tasks`: it is the read audit's upsert, one statement on `task_read_audit`, which has no
   * trigger. Only the rows counted while it ran are subtracted; every other write of this
   * connection, by whatever path, still moves the stamp.
   */
  outsideTasks<T>(write: () => T): T {
    const before = (this.totalChanges.get() as { changes: number }).changes;
    try {
      return write();
    } finally {
      this.uncounted += (this.totalChanges.get() as { changes: number }).changes - before;
    }
  }

  private current(stamp: Stamp): boolean {
    const held = this.stampOfRows;
    return held !== null && held.version === stamp.version && held.changes === stamp.changes;
  }
}
