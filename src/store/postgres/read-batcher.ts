import type pg from 'pg';
import type { Millis } from '../../core/types.js';
import { isStorableText } from '../../core/text.js';
import { unstorableError } from '../storable.js';
import { isStatementError } from './connection.js';
import type { TaskRow } from './row.js';
import { Batcher, MemberQueue } from '../batcher.js';

/**
 * Visible tasks of many readers in one statement: $1 is a JSON array with one `[task id, auth
 * key, clock]` per reader, followed by the `xmin` and version of the row it kept when it kept
 * one, and a row found for reader i comes back (i from 1) as `[i]` when the stored row still has
 * that `xmin` and version, else as `[i, xmin, row]`, in one JSON array (`rows`; null when none is
 * found). Each reader's row is looked up by its task id
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
  SELECT json_agg(CASE WHEN t.row_xmin = r.reader->>3 AND t.version = (r.reader->>4)::int THEN json_build_array(r.i)
                       ELSE json_build_array(r.i, t.row_xmin, t.row) END) AS rows
    FROM json_array_elements($1::json) WITH ORDINALITY AS r(reader, i)
    CROSS JOIN LATERAL (SELECT tasks AS row, tasks.xmin::text AS row_xmin, tasks.version, tasks.auth_key, tasks.expires_at_ms
                          FROM tasks WHERE tasks.task_id = r.reader->>0 LIMIT 1) t
   WHERE t.auth_key = r.reader->>1 AND (t.expires_at_ms IS NULL OR t.expires_at_ms > (r.reader->>2)::bigint)`,
} as const;

export interface ReadBatcherOptions {
  /**
   * Statements at the server at once (default 1); a read arriving while all are out waits for the
   * next. One: every read that arrives while a statement is out shares the next, which is what
   * keeps the statements per poll low (`tasks/get` over HTTP at 16 pollers: 0.35 statements per
   * request with 2 out, 0.20 with 1, and 17 % more polls answered; gathering each turn's reads
   * before the first statement goes out, another 14 %); a read waits for at most the statement
   * before it and `gatherTurns`.
   */
  inFlight?: number;
  /** Most reads in one statement (default 500). */
  maxBatch?: number;
  /**
   * Turns of the event loop a statement waits for more reads to join it before it goes out
   * (default 4; none once `maxBatch` wait, nor past 1 ms: `GATHER_MS`). Requests arrive over
   * several turns, a few per turn, so a statement sent at the end of the first turn carries few;
   * waiting four turns takes `tasks/get` over HTTP at 16 pollers from 0.23–0.39 to 0.10
   * statements per request and from 19,100–22,800 to 27,200–29,300 requests answered per second
   * (two turns: 0.12–0.15; six or eight: no better than four). A turn with nothing to do takes
   * about a microsecond: a lone read waits some 4 µs more.
   */
  gatherTurns?: number;
  /** Most time a statement waits for those turns (ms, default 1: `GATHER_MS`). */
  gatherMs?: number;
  /** Most rows kept to be answered again when unchanged (default 10,000; 0 keeps none). */
  keepRows?: number;
  /** Most bytes of JSON those rows came as (default 32 MiB). */
  keepBytes?: number;
}

/**
 * A row as the last statement that returned it whole stored it, with the transaction that wrote
 * that version of it (`xmin`). Kept for at most `KEEP_MS`.
 */
interface Kept {
  /** Its task id, owner and version are the row's own. */
  row: TaskRow;
  xmin: string;
  /** `performance.now()` when the row came. */
  at: number;
  /** Its share of the JSON it came in. */
  bytes: number;
}

/**
 * How long a kept row may be compared: far less than the time PostgreSQL takes to hand out 2^32
 * transaction ids (over an hour even at a million a second), so an `xmin` seen again is the
 * same transaction, never a later one whose id wrapped around to the same number. (A frozen row
 * keeps its `xmin`: freezing marks the row, it does not rewrite the id.)
 */
const KEEP_MS = 60_000;

/**
 * Most time a statement waits for more reads, whatever `gatherTurns` says: in a process whose
 * turns are long (a handler computing in it) a few turns could take far longer than the round
 * trip they save.
 */
const GATHER_MS = 1;

interface Pending {
  taskId: string;
  authKey: string;
  now: Millis;
  /** The kept row whose `xmin` and version the statement was asked to compare. */
  kept: Kept | undefined;
  resolve: (row: TaskRow | undefined) => void;
  reject: (error: unknown) => void;
}

/** A reader's answer in the statement's JSON: `[i]` (the kept row is current) or `[i, xmin, row]`. */
type Answer = [number] | [number, string, TaskRow];

/** The statement's one column as text: parsed here, so its length is known. */
const JSON_AS_TEXT = { getTypeParser: () => (value: string) => value };

/**
 * Groups concurrent `tasks/get` reads into one statement. Every read is answered by a statement
 * sent after the read was asked for: a read never joins a statement already on its way, so it
 * sees every write acknowledged before it began (PostgreSQL's read committed takes each
 * statement's snapshot when the statement starts). A statement goes out `gatherTurns` turns of
 * the event loop after the turn that asked for its first read, or after the statement before it
 * ended, with every read asked for meanwhile (the requests that arrived together, and those
 * still arriving); the reads that arrive while `inFlight` statements are out share the next one.
 * That is what turns sixteen polls into one round trip.
 *
 * A row the statement returned whole is kept, with its `xmin` (the transaction that wrote that
 * version of the row) and version. The next read of the task still goes to the database, by a
 * statement sent after it began, with the kept row's `xmin` and version: when the stored row
 * still has both, the statement answers `[i]` alone and the kept row is the answer, identical to
 * what it would have sent; any write of the row since, by any process and whatever it changed
 * (a version, a lease, a key, a row replaced by seeding, or deleted and admitted again), gave
 * the row a new `xmin`, and the statement sends it whole. The owner and expiry are checked on
 * the stored row either way. What is saved is building and parsing the row's JSON on every poll
 * of a task that has not changed, not the round trip: a kept row is never answered without the
 * database saying it is current.
 */
export class ReadBatcher {
  private readonly batcher: Batcher<Pending>;
  private readonly keepRows: number;
  private readonly keepBytes: number;
  /** Kept rows by task id, the oldest first. */
  private readonly kept = new Map<string, Kept>();
  private keptBytes = 0;

  constructor(
    private readonly pool: pg.Pool,
    options: ReadBatcherOptions = {},
  ) {
    this.batcher = new Batcher<Pending>(
      {
        // Not sent at once: at the end of the turn of the event loop that asked for the first
        // read at the earliest, with every read its turn asked for (the requests that arrived
        // together), not with the first alone; then up to `gatherTurns` more turns for more reads
        // to join (the requests whose bytes the server is still reading), but no more than
        // `GATHER_MS`: fewer, larger statements (see `gatherTurns`). A statement out already
        // (`inFlight`): the reads wait for it to end, then gather as many turns again.
        schedule: { at: 'turns', turns: Math.max(0, options.gatherTurns ?? 4), maxMs: options.gatherMs ?? GATHER_MS },
        inFlight: options.inFlight ?? 1,
        maxBatch: options.maxBatch ?? 500,
        flush: (batch) => this.run(batch),
        // Refused for one read's sake, not an outage: each read on its own, so that only that one
        // fails. Otherwise every read of the batch not answered yet fails (an answered one is
        // settled already).
        isMemberError: isStatementError,
        fail: (batch, error) => {
          for (const p of batch) p.reject(error);
        },
      },
      new MemberQueue<Pending>(),
    );
    this.keepRows = Math.max(0, options.keepRows ?? 10_000);
    this.keepBytes = Math.max(0, options.keepBytes ?? 32 * 1024 * 1024);
  }

  /** The caller's visible row of `taskId` (its own, unexpired at `now`), or undefined. */
  visible(taskId: string, authKey: string, now: Millis): Promise<TaskRow | undefined> {
    // Checked before it joins: in the statement's JSON parameter a NUL or a lone surrogate fails
    // the statement, and with it every read beside this one.
    if (!isStorableText(taskId) || !isStorableText(authKey)) return Promise.reject(unstorableError(isStorableText(taskId) ? 'the auth key' : 'the task id'));
    return new Promise((resolve, reject) => {
      const held = this.kept.get(taskId);
      // Only the caller's own kept row is offered for comparison, and only while young enough.
      const kept = held !== undefined && held.row.auth_key === authKey && performance.now() - held.at < KEEP_MS ? held : undefined;
      this.batcher.add({ taskId, authKey, now, kept, resolve, reject });
    });
  }

  private async run(batch: Pending[]): Promise<void> {
    const readers = JSON.stringify(
      batch.map((p) => (p.kept === undefined ? [p.taskId, p.authKey, p.now] : [p.taskId, p.authKey, p.now, p.kept.xmin, p.kept.row.version])),
    );
    const found = await this.pool.query<{ rows: string | null }>({
      name: 'tasklatch_select_visible_kept',
      text: readBatchSql.selectVisibleMany,
      values: [readers],
      types: JSON_AS_TEXT,
    });
    const text = found.rows[0]?.rows ?? null;
    this.answer(batch, text === null ? [] : (JSON.parse(text) as Answer[]), text?.length ?? 0);
  }

  private answer(batch: Pending[], answers: Answer[], length: number): void {
    const rows: Array<TaskRow | undefined> = new Array<TaskRow | undefined>(batch.length);
    const whole = answers.reduce((n, answer) => (answer.length === 3 ? n + 1 : n), 0);
    const share = whole === 0 ? 0 : Math.ceil(length / whole);
    const at = performance.now();
    for (const answer of answers) {
      const p = batch[answer[0] - 1]!;
      if (answer.length === 1) {
        // Only a reader that offered a kept row is answered `[i]`.
        if (p.kept === undefined) throw new Error(`read ${answer[0]} answered as kept, but it kept no row`);
        rows[answer[0] - 1] = p.kept.row;
      } else {
        const row = answer[2];
        rows[answer[0] - 1] = row;
        this.keep({ row, xmin: answer[1], at, bytes: share });
      }
    }
    batch.forEach((p, index) => {
      // A kept row the caller can no longer see is dropped (unless a newer one replaced it).
      if (rows[index] === undefined && p.kept !== undefined && this.kept.get(p.taskId) === p.kept) this.drop(p.kept);
      p.resolve(rows[index]);
    });
  }

  private keep(entry: Kept): void {
    if (entry.bytes > this.keepBytes / 4 || this.keepRows === 0) return;
    // Shared by every read it answers: nothing may change it.
    deepFreeze(entry.row);
    const held = this.kept.get(entry.row.task_id);
    if (held !== undefined) this.drop(held);
    this.kept.set(entry.row.task_id, entry);
    this.keptBytes += entry.bytes;
    for (const oldest of this.kept.values()) {
      if (this.kept.size <= this.keepRows && this.keptBytes <= this.keepBytes) break;
      this.drop(oldest);
    }
  }

  private drop(entry: Kept): void {
    this.kept.delete(entry.row.task_id);
    this.keptBytes -= entry.bytes;
  }
}

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}
