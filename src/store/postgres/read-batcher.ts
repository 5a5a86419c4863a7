import type pg from 'pg';
import type { Millis } from '../../core/types.js';
import type { TaskRow } from './row.js';

/**
 * Visible tasks of many readers in one statement: $1 is a JSON array with one `[task id, auth
 * key, clock]` per reader, and a row found for reader i comes back as `[i, row]` (i from 1) in
 * one JSON array (`rows`; null when none is found). Each reader's row is looked up by its task id
 * alone and kept only when it is that reader's (its auth key) and unexpired at its clock
 * (`!isExpired`), so a reader only ever gets its own task. One text for any batch size, so each
 * connection prepares it once.
 *
 * One JSON value each way, not three arrays in and a row of every column out: node-postgres
 * writes an array parameter's literal in JavaScript, element by element, and parses a result's
 * row description and every column of every row on each execution (it describes the portal
 * every time), where `JSON.stringify` and `JSON.parse` do the same in one native call each.
 * Columns keep their JSON types: bigint columns arrive as numbers (epoch milliseconds, far below
 * 2^53) and jsonb as the value pg would have parsed.
 *
 * The lookup is a LATERAL subquery with LIMIT 1 (the id is the primary key: at most one row
 * either way) so that the only plan is a primary-key lookup per reader. As a plain join, the
 * plan a connection keeps for the statement was chosen while the table was small (a connection
 * prepares it on its first reads, and on a server whose autovacuum never analyzes the table
 * nothing tells the planner the table grew): a hash join over a sequential scan of every task,
 * on every read, however large the table became.
 */
export const readBatchSql = {
  selectVisibleMany: `
  SELECT json_agg(json_build_array(r.i, t)) AS rows FROM json_array_elements($1::json) WITH ORDINALITY AS r(reader, i)
    CROSS JOIN LATERAL (SELECT * FROM tasks WHERE tasks.task_id = r.reader->>0 LIMIT 1) t
   WHERE t.auth_key = r.reader->>1 AND (t.expires_at_ms IS NULL OR t.expires_at_ms > (r.reader->>2)::bigint)`,
} as const;

export interface ReadBatcherOptions {
  /**
   * Statements at the server at once (default 1); a read arriving while all are out waits for the
   * next. One: every read that arrives while a statement is out shares the next, which is what
   * keeps the statements per poll low (`tasks/get` over HTTP at 16 pollers: 0.35 statements per
   * request with 2 out, 0.20 with 1, and 17 % more polls answered; gathering each turn's reads
   * before the first statement goes out, another 14 %); a read never waits for more than the
   * statement before it.
   */
  inFlight?: number;
  /** Most reads in one statement (default 500). */
  maxBatch?: number;
}

interface Pending {
  taskId: string;
  authKey: string;
  now: Millis;
  resolve: (row: TaskRow | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Groups concurrent `tasks/get` reads into one statement. Every read is answered by a statement
 * sent after the read was asked for: a read never joins a statement already on its way, so it
 * sees every write acknowledged before it began (PostgreSQL's read committed takes each
 * statement's snapshot when the statement starts). A statement goes out at the end of the turn
 * of the event loop that asked for its first read, with every read that turn asked for (the
 * requests that arrived together: a lone read waits only for its own turn to end); the reads
 * that arrive while `inFlight` statements are out share the next one. That is what turns
 * sixteen polls into one round trip.
 */
export class ReadBatcher {
  private queue: Pending[] = [];
  private turnEnding = false;
  private out = 0;
  private readonly inFlight: number;
  private readonly maxBatch: number;

  constructor(
    private readonly pool: pg.Pool,
    options: ReadBatcherOptions = {},
  ) {
    this.inFlight = Math.max(1, options.inFlight ?? 1);
    this.maxBatch = Math.max(1, options.maxBatch ?? 500);
  }

  /** The caller's visible row of `taskId` (its own, unexpired at `now`), or undefined. */
  visible(taskId: string, authKey: string, now: Millis): Promise<TaskRow | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ taskId, authKey, now, resolve, reject });
      // The statement goes out at the end of this turn of the event loop, with every read its
      // turn asked for (the requests that arrived together), not with the first alone.
      if (!this.turnEnding) {
        this.turnEnding = true;
        setImmediate(() => {
          this.turnEnding = false;
          this.send();
        });
      }
    });
  }

  private send(): void {
    while (this.out < this.inFlight && this.queue.length > 0) {
      const batch = this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch);
      this.queue = this.queue.length <= this.maxBatch ? [] : this.queue.slice(this.maxBatch);
      this.out += 1;
      void this.run(batch).finally(() => {
        this.out -= 1;
        this.send();
      });
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      const readers = JSON.stringify(batch.map((p) => [p.taskId, p.authKey, p.now]));
      const found = await this.pool.query<{ rows: Array<[number, TaskRow]> | null }>({
        name: 'tasklatch_select_visible_json',
        text: readBatchSql.selectVisibleMany,
        values: [readers],
      });
      const rows: Array<TaskRow | undefined> = new Array<TaskRow | undefined>(batch.length);
      for (const [index, row] of found.rows[0]?.rows ?? []) rows[index - 1] = row;
      batch.forEach((p, index) => p.resolve(rows[index]));
    } catch (error) {
      for (const p of batch) p.reject(error);
    }
  }
}
