import { openSqlite } from './connection.js';
import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { decodeProgress } from '../progress-event.js';
import type { ProgressEvent } from '../types.js';

/**
 * The decisions whose audit line accompanies a change of the task record (admission, applied
 * writes including claims and abandons, cancellation, a lease given back, an ask, an answer, a
 * recorded step, an event stored): the lines a change listener reports. All but admission's carry the version
 * after the change (a step that did not suspend its task carries its unchanged version: a
 * notification only says "look again", and a run ignores a version it holds already).
 */
const CHANGE_DECISIONS = [
  'ACCEPT_TASK',
  'APPLY_TRANSITION',
  'CANCEL_TASK',
  'RELEASE_LEASE',
  'APPLY_ASK',
  'APPLY_ANSWER',
  'APPLY_STEP',
  'APPLY_PARK',
  'APPLY_EVENT',
] as const;

/** How often the listener asks whether another connection committed (cheap: one pragma). */
const POLL_MS = 30;

interface ChangeLine {
  id: number;
  decision: (typeof CHANGE_DECISIONS)[number];
  task_id: string;
  version: number | null;
}

/**
 * Cross-process change notifications for a SQLite file. SQLite has no LISTEN/NOTIFY, but every
 * record change writes an audit line in its own transaction: a dedicated read connection polls
 * `PRAGMA data_version` (which changes only when another connection committed) and, when it
 * changed, reads the change lines written since the last one it saw. Writes through any other
 * connection are reported, this process's own included, as PostgreSQL reports them too.
 * With `onProgress`, the same poll reads the `task_progress` rows written since the last one
 * seen and reports them first: a task's last progress, written just after its final status, is
 * still heard before that status when both fall in one poll.
 */
export class ChangeListener {
  private readonly db: SqliteDatabase;
  private readonly changesAfter: SqliteStatement;
  private readonly lastLine: SqliteStatement;
  private readonly progressAfter: SqliteStatement | null;
  private readonly timer: NodeJS.Timeout;
  private dataVersion: number;
  private lastSeen: number;
  private lastProgress = 0;
  private closed = false;

  private constructor(
    path: string,
    private readonly onChange: (taskId: string | null, version?: number) => void,
    private readonly onError: (error: Error) => void,
    pollMs: number,
    private readonly onProgress: ((event: ProgressEvent) => void) | null,
  ) {
    this.db = openSqlite(path, { fileMustExist: true });
    const placeholders = CHANGE_DECISIONS.map((d) => `'${d}'`).join(', ');
    this.changesAfter = this.db.prepare(
      `SELECT id, decision, task_id, version FROM task_audit
        WHERE id > ? AND decision IN (${placeholders}) AND task_id IS NOT NULL ORDER BY id`,
    );
    this.lastLine = this.db.prepare('SELECT coalesce(max(id), 0) AS n FROM task_audit');
    this.progressAfter = onProgress === null ? null : this.db.prepare('SELECT id, payload FROM task_progress WHERE id > ? ORDER BY id');
    // From now on: what was written before the listener started is not news.
    this.dataVersion = this.readDataVersion();
    this.lastSeen = (this.lastLine.get() as { n: number }).n;
    if (onProgress !== null) this.lastProgress = (this.db.prepare('SELECT coalesce(max(id), 0) AS n FROM task_progress').get() as { n: number }).n;
    this.timer = setInterval(() => this.poll(), pollMs);
    // A listener alone must not keep the process alive.
    this.timer.unref();
  }

  /** Starts listening on the file at `path`; `close()` stops. */
  static start(
    path: string,
    onChange: (taskId: string | null, version?: number) => void,
    onError: (error: Error) => void,
    onProgress: ((event: ProgressEvent) => void) | null = null,
    pollMs = POLL_MS,
  ): ChangeListener {
    return new ChangeListener(path, onChange, onError, pollMs, onProgress);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.db.close();
  }

  private readDataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  private poll(): void {
    if (this.closed) return;
    let lines: ChangeLine[];
    let progress: Array<{ id: number; payload: string }>;
    try {
      const version = this.readDataVersion();
      if (version === this.dataVersion) return;
      this.dataVersion = version;
      // The change lines and the last line of one snapshot: the next poll starts past every line
      // seen here, the read decisions' lines between changes included, so that a server
      // answering polls does not rescan their lines on every tick. One writer at a time means
      // no line below the last can commit later.
      const read = this.db.transaction(() => ({
        found: this.changesAfter.all(this.lastSeen) as ChangeLine[],
        last: (this.lastLine.get() as { n: number }).n,
        reported: (this.progressAfter?.all(this.lastProgress) ?? []) as Array<{ id: number; payload: string }>,
      }));
      const { found, last, reported } = read.deferred();
      lines = found;
      progress = reported;
      this.lastSeen = Math.max(this.lastSeen, last);
      this.lastProgress = progress.at(-1)?.id ?? this.lastProgress;
    } catch (error) {
      // A busy or vanished file: report it and try again on the next tick.
      this.onError(error as Error);
      return;
    }
    for (const row of progress) {
      const event = decodeProgress(row.payload);
      try {
        if (event !== null) this.onProgress?.(event);
      } catch (error) {
        this.onError(error as Error);
      }
    }
    for (const line of lines) {
      // An admission's line carries no version; an admitted record is always at version 1.
      const version = line.version ?? (line.decision === 'ACCEPT_TASK' ? 1 : undefined);
      try {
        this.onChange(line.task_id, version);
      } catch (error) {
        // A throwing callback must not end the listener (nor, from a timer, the process).
        this.onError(error as Error);
      }
    }
  }
}
