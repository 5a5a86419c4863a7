import { randomBytes, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { TOOL, toolArgs, TTL_MS } from './mcp.js';

/**
 * Raw ceilings: the rows one accepted admission writes (the task row, its outbox row and the
 * ACCEPT_TASK audit line), inserted in one transaction through the same driver against the
 * migrated schema. No MCP, no guard (no ON CONFLICT, no RETURNING, no classification), no
 * digest computation: the cost of the writes alone.
 */

const TASK_INSERT_COLUMNS = [
  'task_id',
  'auth_key',
  'tool_name',
  'status',
  'version',
  'created_at_ms',
  'last_updated_at_ms',
  'ttl_ms',
  'expires_at_ms',
  'poll_interval_ms',
  'request_digest',
  'request',
  'correlation_id',
] as const;

/** One admission's row values, shaped like tasklatch's (request JSON, digest, expiry). */
function row(authKey: string, n: number): unknown[] {
  const now = Date.now();
  const request = JSON.stringify({ method: 'tools/call', params: { name: TOOL, arguments: toolArgs(n), task: { ttl: TTL_MS } } });
  return [randomUUID(), authKey, TOOL, 'working', 1, now, now, TTL_MS, now + TTL_MS, 1000, randomBytes(32).toString('hex'), request, randomUUID()];
}

const PG_TASK = `INSERT INTO tasks (${TASK_INSERT_COLUMNS.join(', ')}) VALUES (${TASK_INSERT_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;
const PG_OUTBOX = 'INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms) VALUES ($1, $2, $2)';
const PG_AUDIT = `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
  VALUES ($1, 'create', 'ACCEPT_TASK', $2, $3, $4, NULL, NULL, NULL)`;

/**
 * One PostgreSQL ceiling transaction on `pool`. `notify` adds the pg_notify tasklatch sends in
 * the same transaction (on a channel of the bench's own), to show what NOTIFY alone costs.
 */
export async function pgCeiling(pool: pg.Pool, authKey: string, n: number, notify = false): Promise<void> {
  const values = row(authKey, n);
  const [taskId, , , , , now, , , , , , , correlationId] = values;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(PG_TASK, values);
    await client.query(PG_OUTBOX, [taskId, now]);
    await client.query(PG_AUDIT, [now, authKey, taskId, correlationId]);
    if (notify) await client.query(`SELECT pg_notify('tlbench_ceiling', $1)`, [taskId]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** The SQLite ceiling: a second connection to the store's file, with the store's pragmas. */
export function sqliteCeiling(path: string): { op(authKey: string, n: number): Promise<void>; close(): void } {
  const db = new Database(path, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  const task = db.prepare(`INSERT INTO tasks (${TASK_INSERT_COLUMNS.join(', ')}) VALUES (${TASK_INSERT_COLUMNS.map(() => '?').join(', ')})`);
  const outbox = db.prepare('INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms) VALUES (?, ?, ?)');
  const audit = db.prepare(`INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id) VALUES (?, 'create', 'ACCEPT_TASK', ?, ?, ?)`);
  const admit = db.transaction((values: unknown[]) => {
    const [taskId, authKey, , , , now, , , , , , , correlationId] = values;
    task.run(values);
    outbox.run(taskId, now, now);
    audit.run(now, authKey, taskId, correlationId);
  });
  return {
    // async like the store's own methods, so both sit in the same promise loop.
    op: async (authKey, n) => {
      admit.immediate(row(authKey, n));
    },
    close: () => db.close(),
  };
}
