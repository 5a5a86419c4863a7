import type pg from 'pg';
import { decideSendEvent, sendWakes } from '../../core/event-rules.js';
import { holdsFence } from '../../core/dispatch-rules.js';
import { sendEventAuditLine } from '../audit-line.js';
import type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome } from '../task-event-box.js';
import { auditToRow, rowToRecord, type TaskRow } from './row.js';
import { inShortTransaction } from './transactions.js';

/**
 * The event operations of the PostgreSQL store (`task_events`). A send and a take lock the task
 * row first, as every writer of a task's rows does (a step's record among them), so a send and a
 * wait that suspends are serialized: whichever commits second sees the other's row.
 */

/** The statements of the event role in PostgreSQL, by camelCase name as in the other roles' maps. */
export const eventSql = {
  lockTask: `SELECT * FROM tasks WHERE task_id = $1 FOR UPDATE`,
  /** The task's pending events, its highest seq, and whether its journal holds a wait still pending; after the lock. */
  counts: `SELECT (SELECT count(*)::int FROM task_events WHERE task_id = $1 AND consumed_at_ms IS NULL) AS pending,
                  (SELECT coalesce(max(seq), 0)::int FROM task_events WHERE task_id = $1) AS top,
                  EXISTS (SELECT 1 FROM task_steps WHERE task_id = $1 AND kind = 'event' AND status = 'waiting') AS waiting`,
  insertEvent: `INSERT INTO task_events (task_id, seq, type, payload, key, sent_at_ms) VALUES ($1, $2, $3, $4, $5, $6)`,
  /** The open outbox entry due now (never later than it was), unclaimed ($1 task id, $2 now). */
  dueNow: `UPDATE task_outbox SET available_at_ms = LEAST(available_at_ms, $2::bigint) WHERE task_id = $1 AND done_at_ms IS NULL`,
  /** The event the wait at the position took before, else the first pending one of its type ($1 task id, $2 position, $3 type). */
  selectTaken: `SELECT seq, payload FROM task_events WHERE task_id = $1 AND (position = $2 OR (type = $3 AND consumed_at_ms IS NULL))
     ORDER BY (position = $2) IS TRUE DESC, seq LIMIT 1`,
  consume: `UPDATE task_events SET consumed_at_ms = coalesce(consumed_at_ms, $3::bigint), position = $4 WHERE task_id = $1 AND seq = $2`,
  /** A suspended task woken by a send: version + 1 (see `sendWakes`; the rules judged it under the lock). */
  bump: `UPDATE tasks SET version = version + 1, last_updated_at_ms = $2 WHERE task_id = $1`,
  /** After a suspension recording a wait: due now when an event of its type is pending ($1 task id, $2 now, $3 type). */
  wakeIfPending: `UPDATE task_outbox SET available_at_ms = $2::bigint WHERE task_id = $1 AND done_at_ms IS NULL
     AND EXISTS (SELECT 1 FROM task_events WHERE task_id = $1 AND type = $3 AND consumed_at_ms IS NULL)`,
  insertAudit: `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
} as const;

export async function sendEventIn(pool: pg.Pool, input: SendEventInput): Promise<SendEventOutcome> {
  return inShortTransaction(pool, async (tx) => {
    const [locked, counted] = await tx.queryAll([
      { text: eventSql.lockTask, params: [input.taskId] },
      { text: eventSql.counts, params: [input.taskId] },
    ]);
    const row = (locked?.rows as TaskRow[] | undefined)?.[0];
    const task = row === undefined ? null : rowToRecord(row);
    const counts = counted?.rows[0] as { pending: number; top: number; waiting: boolean };
    const decision = decideSendEvent({
      record: task,
      auth: input.authKey,
      now: input.now,
      payloadBytes: Buffer.byteLength(input.payloadText, 'utf8'),
      maxEventBytes: input.maxEventBytes,
      pending: counts.pending,
      maxPendingEvents: input.maxPendingEvents,
    });
    const found = task !== null && (input.authKey === null || task.authKey === input.authKey) ? task : null;
    const seq = decision === 'APPLY_EVENT' ? counts.top + 1 : null;
    const bumps = seq !== null && task !== null && sendWakes(task, counts.waiting);
    // Under the lock the rules just judged, the write leaves exactly this.
    const visible = found !== null && bumps ? Object.assign({}, found, { version: found.version + 1, lastUpdatedAt: input.now }) : found;
    const line = sendEventAuditLine(input, decision, visible, seq);
    const audit = { text: eventSql.insertAudit, params: auditToRow(line) };
    if (seq === null) {
      await tx.commitWith([audit]);
      return { decision, record: visible, seq, woke: false };
    }
    const insert = { text: eventSql.insertEvent, params: [input.taskId, seq, input.type, input.payloadText, input.key, input.now] };
    const wake = counts.waiting ? [{ text: eventSql.dueNow, params: [input.taskId, input.now] }] : [];
    const bump = bumps ? [{ text: eventSql.bump, params: [input.taskId, input.now] }] : [];
    const results = await tx.commitWith([insert, ...wake, ...bump, audit]);
    const woke = counts.waiting && (results[1]?.rowCount ?? 0) > 0;
    return { decision, record: visible, seq, woke };
  });
}

export async function takeEventIn(pool: pg.Pool, input: TakeEventInput): Promise<TakeEventOutcome> {
  const { fence } = input;
  return inShortTransaction(pool, async (tx) => {
    const [locked, found] = await tx.queryAll([
      { text: eventSql.lockTask, params: [fence.taskId] },
      { text: eventSql.selectTaken, params: [fence.taskId, input.position, input.type] },
    ]);
    const row = (locked?.rows as TaskRow[] | undefined)?.[0];
    const task = row === undefined ? null : rowToRecord(row);
    const event = found?.rows[0] as { seq: number; payload: string } | undefined;
    if (task === null || task.status !== 'working' || !holdsFence(task, fence, input.now)) {
      await tx.commitWith([]);
      return { decision: 'LOST', event: null };
    }
    if (event === undefined) {
      await tx.commitWith([]);
      return { decision: 'HELD', event: null };
    }
    await tx.commitWith([{ text: eventSql.consume, params: [fence.taskId, event.seq, input.now, input.position] }]);
    return { decision: 'HELD', event: { seq: event.seq, payload: JSON.parse(event.payload) as unknown } };
  });
}
