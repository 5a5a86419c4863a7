import { coerceError } from '../../core/errors.js';
import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { encodeProgress } from '../progress-event.js';
import { committed } from './transactions.js';
import type { ProgressEvent } from '../types.js';

/** Rows of `task_progress` kept: a listener more than this many events behind loses the oldest. */
export const PROGRESS_ROWS_KEPT = 256;

/**
 * How long a progress write waits for another process's write lock (ms). Far below the store's
 * busy timeout: better-sqlite3 waits synchronously, and progress is not worth holding up this
 * process (or its own status writes) for; a progress that finds the file busy is dropped.
 */
const PROGRESS_BUSY_MS = 20;

/** Writes coalesced progress to `task_progress` (migration 007) and trims it as it goes. */
export class ProgressWriter {
  private readonly insert: SqliteStatement;
  private readonly trim: SqliteStatement;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly onProblem: (message: string, fields: Record<string, unknown>) => void,
  ) {
    this.insert = db.prepare('INSERT INTO task_progress (payload) VALUES (?)');
    this.trim = db.prepare('DELETE FROM task_progress WHERE id <= ?');
  }

  /** One short transaction for `events`; never throws (what cannot be written is reported and lost). */
  write(events: readonly ProgressEvent[]): void {
    const payloads = events.map(encodeProgress).filter((text): text is string => text !== null);
    if (payloads.length === 0 || !this.db.open) return;
    const busyMs = this.db.pragma('busy_timeout', { simple: true }) as number;
    try {
      this.db.pragma(`busy_timeout = ${PROGRESS_BUSY_MS}`);
      this.db
        .transaction(() => {
          let last = 0;
          for (const payload of payloads) last = Number(this.insert.run(payload).lastInsertRowid);
          this.trim.run(last - PROGRESS_ROWS_KEPT);
        })
        .immediate();
      committed(this.db);
    } catch (error) {
      this.onProblem('progress not published', { count: payloads.length, reason: coerceError(error).message });
    } finally {
      this.db.pragma(`busy_timeout = ${busyMs}`);
    }
  }
}
