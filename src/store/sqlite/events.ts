import { decideSendEvent, sendWakes } from '../../core/event-rules.js';
import { holdsFence } from '../../core/dispatch-rules.js';
import type { Millis } from '../../core/types.js';
import { sendEventAuditLine } from '../audit-line.js';
import type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome } from '../task-event-box.js';
import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { auditToRow, rowToRecord, type TaskRow } from './row.js';
import type { Statements } from './statements.js';
import { readById } from './reads.js';

/**
 * The event operations of the SQLite store (`task_events`). Each runs inside the caller's
 * `BEGIN IMMEDIATE` transaction: the write lock is held from the first read, so a send and a
 * wait that suspends are serialized (whichever commits second sees the other's row).
 */

const eventSql = {
  /** The task's pending events and its highest seq. */
  counts: `SELECT count(*) FILTER (WHERE consumed_at_ms IS NULL) AS pending, coalesce(max(seq), 0) AS top FROM task_events WHERE task_id = ?`,
  insert: `INSERT INTO task_events (task_id, seq, type, payload, key, sent_at_ms) VALUES (@task_id, @seq, @type, @payload, @key, @now)`,
  /** Whether the task's journal holds a wait still pending. */
  waiting: `SELECT 1 AS found FROM task_steps WHERE task_id = ? AND kind = 'event' AND status = 'waiting' LIMIT 1`,
  /** The open outbox entry due now (never later than it was). */
  dueNow: `UPDATE task_outbox SET available_at_ms = min(available_at_ms, @now) WHERE task_id = @task_id AND done_at_ms IS NULL`,
  /** The event the wait at the position took before, else the first pending one of its type. */
  takenAt: `SELECT seq, payload FROM task_events WHERE task_id = ? AND position = ?`,
  firstPending: `SELECT seq, payload FROM task_events WHERE task_id = ? AND type = ? AND consumed_at_ms IS NULL ORDER BY seq LIMIT 1`,
  consume: `UPDATE task_events SET consumed_at_ms = coalesce(consumed_at_ms, @now), position = @position WHERE task_id = @task_id AND seq = @seq`,
  /** A suspended task woken by a send: version + 1 (see `sendWakes`). */
  bump: `UPDATE tasks SET version = version + 1, last_updated_at_ms = @now WHERE task_id = @task_id AND status = 'working' AND lease_owner IS NULL RETURNING *`,
  pendingOfType: `SELECT 1 AS found FROM task_events WHERE task_id = ? AND type = ? AND consumed_at_ms IS NULL LIMIT 1`,
} as const;

export type EventStatements = { readonly [K in keyof typeof eventSql]: SqliteStatement };

export function prepareEventStatements(db: SqliteDatabase): EventStatements {
  return Object.fromEntries(Object.entries(eventSql).map(([name, text]) => [name, db.prepare(text)] as const)) as EventStatements;
}

export function sendEventIn(sql: Statements, events: EventStatements, input: SendEventInput): SendEventOutcome {
  const task = readById(sql, input.taskId);
  const counts = events.counts.get(input.taskId) as { pending: number; top: number };
  const decision = decideSendEvent({
    record: task,
    auth: input.authKey,
    now: input.now,
    payloadBytes: Buffer.byteLength(input.payloadText, 'utf8'),
    maxEventBytes: input.maxEventBytes,
    pending: counts.pending,
    maxPendingEvents: input.maxPendingEvents,
  });
  let visible = task !== null && (input.authKey === null || task.authKey === input.authKey) ? task : null;
  let seq: number | null = null;
  let woke = false;
  if (decision === 'APPLY_EVENT' && task !== null) {
    seq = counts.top + 1;
    events.insert.run({ task_id: input.taskId, seq, type: input.type, payload: input.payloadText, key: input.key, now: input.now });
    const waiting = events.waiting.get(input.taskId) !== undefined;
    if (waiting) woke = events.dueNow.run({ task_id: input.taskId, now: input.now }).changes > 0;
    if (sendWakes(task, waiting)) {
      const row = events.bump.get({ task_id: input.taskId, now: input.now }) as TaskRow | undefined;
      if (row !== undefined && visible !== null) visible = rowToRecord(row);
    }
  }
  const line = sendEventAuditLine(input, decision, visible, seq);
  sql.insertAudit.run(auditToRow(line));
  return { decision, record: visible, seq, woke };
}

export function takeEventIn(sql: Statements, events: EventStatements, input: TakeEventInput): TakeEventOutcome {
  const { fence } = input;
  const task = readById(sql, fence.taskId);
  if (task === null || task.status !== 'working' || !holdsFence(task, fence, input.now)) return { decision: 'LOST', event: null };
  const found = (events.takenAt.get(fence.taskId, input.position) ?? events.firstPending.get(fence.taskId, input.type)) as
    { seq: number; payload: string } | undefined;
  if (found === undefined) return { decision: 'HELD', event: null };
  events.consume.run({ task_id: fence.taskId, seq: found.seq, now: input.now, position: input.position });
  return { decision: 'HELD', event: { seq: found.seq, payload: JSON.parse(found.payload) as unknown } };
}

/** After a suspension recording a wait of `type`: due now when an event of the type is pending. */
export function wakeIfPending(events: EventStatements, taskId: string, type: string, now: Millis): boolean {
  return events.pendingOfType.get(taskId, type) !== undefined && events.dueNow.run({ task_id: taskId, now }).changes > 0;
}
