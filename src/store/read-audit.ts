import type { Decision } from '../core/decisions.js';
import type { Millis } from '../core/types.js';
import type { AuditEntry } from './types.js';

/**
 * The decisions made outside a store write (reads, lists, refusals and misses, plain calls) are
 * kept as counts, not lines: one row per (task, auth key, surface, decision, window) with how
 * many, the first and the last time, and the latest correlation id, status, version and detail.
 * A client polling a task once a second adds one row per hour, not 3,600; the decisions written
 * inside store writes (admission, transitions, cancels, claims, asks, answers) stay one exact
 * line each in `task_audit`.
 *
 * One hour: the trail still says who read a task in which hour, with the exact first and last
 * time, and a day of polling is 24 rows per reader and decision; a shorter window buys detail
 * nobody reads at a cost in rows that grows with every reader.
 */
export const READ_AUDIT_WINDOW_MS = 3_600_000;

/**
 * Decisions taken on a stored task: their row is keyed by that task. Any other decision names at
 * most the caller's guess (a miss, a refusal before the lookup, a list, a plain call), so its row
 * is keyed by the caller alone and keeps the id only as the latest one named: a caller spraying
 * random ids adds one row per window, not one per id.
 */
const ON_A_STORED_TASK: ReadonlySet<Decision> = new Set<Decision>([
  'RETURN_STATUS',
  'WAIT_TERMINAL',
  'WAIT_INPUT',
  'RETURN_RESULT',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
]);

/** One aggregated row of `task_read_audit`. */
export interface ReadAuditRow {
  /** The task the decisions were taken on, '' when they named no stored task. */
  taskKey: string;
  authKey: string;
  surface: AuditEntry['surface'];
  decision: Decision;
  windowStart: Millis;
  count: number;
  firstAt: Millis;
  lastAt: Millis;
  /** The task id the latest decision named (the key's, or the latest guess; null when none). */
  taskId: string | null;
  correlationId: string;
  status: string | null;
  version: number | null;
  detail: string | null;
}

/** The row one decision adds to (count 1). */
export function readAuditRow(entry: AuditEntry, windowMs: number = READ_AUDIT_WINDOW_MS): ReadAuditRow {
  return {
    taskKey: taskKeyOf(entry),
    authKey: entry.authKey,
    surface: entry.surface,
    decision: entry.decision,
    windowStart: windowOf(entry.at, windowMs),
    count: 1,
    firstAt: entry.at,
    lastAt: entry.at,
    taskId: entry.taskId,
    correlationId: entry.correlationId,
    status: entry.status ?? null,
    version: entry.version ?? null,
    detail: entry.detail ?? null,
  };
}

function taskKeyOf(entry: AuditEntry): string {
  return entry.taskId !== null && ON_A_STORED_TASK.has(entry.decision) ? entry.taskId : '';
}

function windowOf(at: Millis, windowMs: number): Millis {
  return Math.floor(at / windowMs) * windowMs;
}

/** The identity of a row: what the table's unique key holds. */
export function readAuditKey(row: ReadAuditRow): string {
  return keyFrom(row.taskKey, row.authKey, row.surface, row.decision, row.windowStart);
}

/** The key of the row `entry` adds to (`readAuditKey(readAuditRow(entry))`), without building the row. */
export function readAuditKeyOf(entry: AuditEntry, windowMs: number = READ_AUDIT_WINDOW_MS): string {
  return keyFrom(taskKeyOf(entry), entry.authKey, entry.surface, entry.decision, windowOf(entry.at, windowMs));
}

function keyFrom(taskKey: string, authKey: string, surface: string, decision: string, windowStart: Millis): string {
  return `${taskKey}\n${authKey}\n${surface}\n${decision}\n${windowStart}`;
}

/**
 * Two rows of one key as one: counts add, the window's first and last widen, and the latest
 * decision's details win (on a tie, `later`'s, the one recorded after). The SQL upserts restate it.
 */
export function mergeReadAudit(earlier: ReadAuditRow, later: ReadAuditRow): ReadAuditRow {
  return mergeInto({ ...earlier }, later.count, later.firstAt, later.lastAt, later);
}

/** `mergeReadAudit` written into `held`, a row its owner (a writer's queue) lets change. */
export function mergeReadAuditInto(held: ReadAuditRow, later: ReadAuditRow): ReadAuditRow {
  return mergeInto(held, later.count, later.firstAt, later.lastAt, later);
}

/** One decision added to `held`, as merging `readAuditRow(entry)` would, without building that row. */
export function addReadDecision(held: ReadAuditRow, entry: AuditEntry): ReadAuditRow {
  return mergeInto(held, 1, entry.at, entry.at, entry);
}

/** The one merge rule: the details of the latest decision, counts added, the window widened. */
function mergeInto(
  held: ReadAuditRow,
  count: number,
  firstAt: Millis,
  lastAt: Millis,
  latest: Pick<ReadAuditRow, 'taskId' | 'correlationId'> & { status?: string | null; version?: number | null; detail?: string | null },
): ReadAuditRow {
  if (lastAt >= held.lastAt) {
    held.taskId = latest.taskId;
    held.correlationId = latest.correlationId;
    held.status = latest.status ?? null;
    held.version = latest.version ?? null;
    held.detail = latest.detail ?? null;
  }
  held.count += count;
  held.firstAt = Math.min(held.firstAt, firstAt);
  held.lastAt = Math.max(held.lastAt, lastAt);
  return held;
}

/**
 * Merges rows of the same key (one SQL statement cannot update one row twice), in key order: two
 * processes upserting overlapping batches lock their rows in the same order (no deadlock).
 */
export function mergeReadAuditRows(rows: Iterable<ReadAuditRow>): ReadAuditRow[] {
  const merged = new Map<string, ReadAuditRow>();
  for (const row of rows) {
    const key = readAuditKey(row);
    const held = merged.get(key);
    merged.set(key, held === undefined ? row : mergeReadAudit(held, row));
  }
  return [...merged].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, row]) => row);
}

/** A row by the columns of `task_read_audit`, as both SQL stores name them: the PostgreSQL upsert's JSON rows. */
export function readAuditColumns(r: ReadAuditRow): Record<string, string | number | null> {
  return {
    task_key: r.taskKey,
    auth_key: r.authKey,
    surface: r.surface,
    decision: r.decision,
    window_start_ms: r.windowStart,
    count: r.count,
    first_at_ms: r.firstAt,
    last_at_ms: r.lastAt,
    task_id: r.taskId,
    correlation_id: r.correlationId,
    status: r.status,
    version: r.version,
    detail: r.detail,
  };
}

/** A row as a trail entry: `at` is its first decision, with the count and the window's first and last. */
export function readAuditEntry(row: ReadAuditRow): AuditEntry {
  const entry: AuditEntry = {
    at: row.firstAt,
    surface: row.surface,
    decision: row.decision,
    authKey: row.authKey,
    taskId: row.taskId,
    correlationId: row.correlationId,
    status: row.status,
    version: row.version,
    count: row.count,
    firstAt: row.firstAt,
    lastAt: row.lastAt,
  };
  if (row.detail !== null) entry.detail = row.detail;
  return entry;
}

/**
 * The exact lines and the aggregated rows of one trail in time order: by `at` (an aggregated
 * row's first decision), an exact line before a row at the same instant, each kind in its own order.
 */
export function mergeTrail(lines: readonly AuditEntry[], rows: readonly AuditEntry[]): AuditEntry[] {
  const tagged = [...lines.map((entry, i) => ({ entry, kind: 0, i })), ...rows.map((entry, i) => ({ entry, kind: 1, i }))];
  tagged.sort((a, b) => a.entry.at - b.entry.at || a.kind - b.kind || a.i - b.i);
  return tagged.map((t) => t.entry);
}

/** The trail entries of `rows` that concern `taskId`: keyed by it, or naming it as their latest guess. */
export function rowConcerns(row: Pick<ReadAuditRow, 'taskKey' | 'taskId'>, taskId: string): boolean {
  return row.taskKey === taskId || (row.taskKey === '' && row.taskId === taskId);
}
