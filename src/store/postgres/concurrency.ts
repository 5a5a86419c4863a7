import type pg from 'pg';
import { slotFree, slotOf, slotScope, waitingMessage, type ConcurrencySlot } from '../../core/concurrency-rules.js';
import type { TaskRecord } from '../../core/types.js';
import type { ClaimInput } from '../types.js';
import type { Statement } from './transactions.js';

/**
 * Concurrency keys in the PostgreSQL claim walk. Before a page's claims are written, the tasks
 * of a key go through `admitSlots`: the walk takes the key's transaction-scoped advisory lock
 * (`pg_try_advisory_xact_lock`, one per schema, app, tool and key), then counts the key's
 * running tasks (holdsSlot: working, leased, unexpired) in a statement of its own, whose snapshot
 * therefore sees every claim committed by a walk that held the lock before; the lock is held
 * until this walk commits, so no other walk counts the key meanwhile. Claims of the same key in
 * this walk's earlier pages are its own writes, visible to the count; those of this page are
 * counted here.
 *
 * A try-lock, not a wait: two walks taking keys in different orders would deadlock on waiting
 * locks. A walk that finds a key's lock taken leaves that key's tasks due and untouched, as SKIP
 * LOCKED leaves a row: the walk holding the lock decides on the key, and what it leaves is found
 * by the next look (a run's end, a change event, the poll).
 */

/** The claims a walk may write, and the status write of those left waiting for a slot (null: none). */
export interface SlotDecision<C> {
  take: C[];
  waiting: Statement | null;
}

/** The advisory lock of each scope in $1 (a text array): whether this walk holds it now. */
const lockScopesSql = `
  SELECT s AS scope, pg_try_advisory_xact_lock(hashtextextended('tasklatch.concurrency' || chr(10) || current_schema() || chr(10) || s, 0)) AS locked
    FROM unnest($1::text[]) AS s`;

/** Running tasks (restates holdsSlot) of each (app, tool, key) in $1–$3 at $4. */
const countRunningSql = `
  SELECT w.app, w.tool_name, w.concurrency_key, count(t.task_id)::int AS n
    FROM unnest($1::text[], $2::text[], $3::text[]) AS w (app, tool_name, concurrency_key)
    LEFT JOIN tasks t ON t.app = w.app AND t.tool_name = w.tool_name AND t.concurrency_key = w.concurrency_key
         AND t.status = 'working' AND t.lease_owner IS NOT NULL AND t.lease_expires_at_ms > $4
         AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $4)
   GROUP BY w.app, w.tool_name, w.concurrency_key`;

/**
 * Tasks left waiting say so: a status write (version + 1, an audit line), only where the message
 * says something else. $1 task ids, $2 versions read (the walk holds their rows), $3 messages,
 * $4 now, $5 correlation id.
 */
const markWaitingSql = `
  WITH marked AS (
    UPDATE tasks t SET status_message = w.message, version = t.version + 1, last_updated_at_ms = $4
      FROM unnest($1::text[], $2::int[], $3::text[]) AS w (task_id, version, message)
     WHERE t.task_id = w.task_id AND t.version = w.version AND t.status_message IS DISTINCT FROM w.message
    RETURNING t.*
  )
  INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
  SELECT $4::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $5::text, status, version, 'concurrency wait' FROM marked`;

/** Decides which of a page's claims (in walk order) their concurrency keys allow; see the file's comment. */
export async function admitSlots<C extends { record: TaskRecord }>(client: pg.PoolClient, input: ClaimInput, claims: readonly C[]): Promise<SlotDecision<C>> {
  const slots = new Map<C, { slot: ConcurrencySlot; scope: string }>();
  for (const claim of claims) {
    const slot = slotOf(claim.record.request);
    if (slot !== null) slots.set(claim, { slot, scope: slotScope(claim.record, slot.key) });
  }
  if (slots.size === 0) return { take: [...claims], waiting: null };
  const scopes = [...new Set([...slots.values()].map((s) => s.scope))];
  const locks = await client.query<{ scope: string; locked: boolean }>(lockScopesSql, [scopes]);
  const held = new Set(locks.rows.filter((r) => r.locked).map((r) => r.scope));
  const running = new Map<string, number>();
  if (held.size > 0) {
    const parts = [...held].map((scope) => scope.split('\n'));
    const counted = await client.query<{ app: string; tool_name: string; concurrency_key: string; n: number }>(countRunningSql, [
      parts.map((p) => p[0]),
      parts.map((p) => p[1]),
      parts.map((p) => p.slice(2).join('\n')),
      input.now,
    ]);
    for (const row of counted.rows) running.set(`${row.app}\n${row.tool_name}\n${row.concurrency_key}`, row.n);
  }
  const take: C[] = [];
  const waiting: { record: TaskRecord; message: string }[] = [];
  for (const claim of claims) {
    const keyed = slots.get(claim);
    if (keyed === undefined) {
      take.push(claim);
      continue;
    }
    // Another walk holds the key's lock: it decides on the key, and this task stays as it is.
    if (!held.has(keyed.scope)) continue;
    const n = running.get(keyed.scope) ?? 0;
    if (slotFree(keyed.slot.limit, n)) {
      running.set(keyed.scope, n + 1);
      take.push(claim);
    } else {
      waiting.push({ record: claim.record, message: waitingMessage(keyed.slot.key, n, keyed.slot.limit) });
    }
  }
  const marks = waiting.filter((w) => w.record.statusMessage !== w.message);
  const statement =
    marks.length === 0
      ? null
      : {
          text: markWaitingSql,
          params: [marks.map((w) => w.record.taskId), marks.map((w) => w.record.version), marks.map((w) => w.message), input.now, input.correlationId],
        };
  return { take, waiting: statement };
}
