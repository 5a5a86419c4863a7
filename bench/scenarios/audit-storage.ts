import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WireRequest } from '../../src/core/types.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime } from '../../src/runtime/task-runtime.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import { noopTool, TOOL, toolArgs } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { fmt } from '../lib/stats.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

export const AUDIT_SCENARIO = 'audit storage';
export const AUDIT_FACT = 'audit bytes per task after an hour of 1 Hz polling';

const HOUR = 3_600_000;
const AUTH = 'bench-audit/poller';

/** Tasks polled together; each answers 3,600 polls over its simulated hour. */
function tasksOf(quick: boolean): number {
  return quick ? 20 : 100;
}

interface Footprint {
  /** Rows of task_audit and task_read_audit that concern the measured tasks. */
  rows: number;
  /** Their row data (column values, as the engine stores them). */
  rowBytes: number;
  /** Growth of both audit tables with their indexes, pages included, over the run. */
  diskBytes: number;
}

interface Dialect {
  name: 'sqlite' | 'postgres';
  open(label: string): Promise<TaskStore>;
  disk(store: TaskStore): Promise<number>;
  rows(store: TaskStore, taskIds: readonly string[]): Promise<{ rows: number; bytes: number }>;
  /** What the database's own maintenance does once a minute (PostgreSQL: autovacuum's pass over the table). */
  minutely(store: TaskStore): Promise<void>;
}

/**
 * What the audit trail costs in storage per task: N tasks admitted, each polled at 1 Hz for an
 * hour of a simulated clock (tasks/get through the service, audited as served), then completed.
 * Counted: every audit row of those tasks (their write lines and their aggregated read rows) and
 * the growth of both audit tables on disk, indexes and pages included. One store per dialect,
 * fresh for the run.
 */
export async function auditStorage(results: Results, quick: boolean, pg: BenchPostgres): Promise<void> {
  const tasks = tasksOf(quick);
  console.log(`\n[audit] ${tasks} tasks, each polled at 1 Hz for an hour (simulated clock), then completed`);
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-audit-'));
  try {
    for (const dialect of [sqliteDialect(dir), postgresDialect(pg)]) {
      const got = await pollAnHour(dialect, tasks, true);
      const bare = dialect.name === 'postgres' ? await pollAnHour(dialect, tasks, false) : null;
      results.addFact(
        AUDIT_SCENARIO,
        `${dialect.name}: ${AUDIT_FACT}`,
        Math.max(got.diskBytes, got.rowBytes) / tasks / 1024,
        'KiB',
        `${tasks} tasks × 3,600 polls; ${fmt(got.rows / tasks)} audit rows per task, ${fmt(got.rowBytes / tasks)} bytes of row data, ` +
          `${fmt(got.diskBytes / tasks)} bytes of table and index growth per task (the larger counts)` +
          (bare === null
            ? ''
            : `; VACUUM once a simulated minute, as autovacuum would in a real hour (without it: ${fmt(bare.diskBytes / tasks / 1024)} KiB of growth per task)`),
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function pollAnHour(dialect: Dialect, n: number, maintained: boolean): Promise<Footprint> {
  const store = await dialect.open(maintained ? 'maintained' : 'unmaintained');
  const t0 = Date.UTC(2026, 6, 23, 12, 0, 0);
  const clock = { now: t0 };
  const runtime = createRuntime({ store, tools: [noopTool], callersIdentified: true, execute: false, clock: () => clock.now, logger: createLogger('silent') });
  try {
    const before = await dialect.disk(store);
    const tool = runtime.tools.descriptor(noopTool);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const request: WireRequest = { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(i), task: { ttl: 2 * HOUR } } };
      const created = await createTask(runtime.guard, { auth: AUTH, tool, request });
      if (created.record === null) throw new Error(`audit storage: admission refused (${created.decision})`);
      ids.push(created.record.taskId);
    }
    for (let s = 1; s <= 3600; s++) {
      clock.now = t0 + s * 1000;
      await Promise.all(ids.map((taskId) => runtime.guard.requestor.read({ auth: AUTH, method: 'tasks/get', taskId })));
      if (maintained && s % 60 === 0) {
        await store.auditTrail({ taskId: ids[0] as string }); // drains the queued read audit
        await dialect.minutely(store);
      }
    }
    clock.now = t0 + HOUR + 1000;
    for (const taskId of ids) {
      const read = await runtime.guard.requestor.read({ auth: AUTH, method: 'tasks/get', taskId });
      if (read.record === null) throw new Error(`audit storage: task ${taskId} not found`);
      const done = await runtime.guard.worker.transition({
        auth: AUTH,
        taskId,
        write: { status: 'completed', expectedVersion: read.record.version, result: { content: [{ type: 'text', text: 'ok' }] } },
      });
      if (done.decision !== 'APPLY_TRANSITION') throw new Error(`audit storage: completion ${done.decision}`);
    }
    await store.auditTrail({ taskId: ids[0] as string }); // drains the queued read audit
    const rows = await dialect.rows(store, ids);
    return { rows: rows.rows, rowBytes: rows.bytes, diskBytes: (await dialect.disk(store)) - before };
  } finally {
    await runtime.close();
    await store.close();
  }
}

function sqliteDialect(dir: string): Dialect {
  const db = (store: TaskStore) => (store as SqliteStore).db;
  return {
    name: 'sqlite',
    open: (label) => SqliteStore.open(join(dir, `${label}.db`)),
    minutely: async () => undefined,
    // Pages of both audit tables and their indexes (the dbstat table of the SQLite build).
    disk: async (store) => {
      db(store).pragma('wal_checkpoint(TRUNCATE)');
      const row = db(store)
        .prepare(
          `SELECT coalesce(sum(pgsize), 0) AS b FROM dbstat WHERE name IN (
             SELECT name FROM sqlite_schema WHERE tbl_name IN ('task_audit', 'task_read_audit'))`,
        )
        .get() as { b: number };
      return row.b;
    },
    rows: async (store, ids) => {
      const list = JSON.stringify(ids);
      const sum = (table: string, key: string) => {
        const columns = (db(store).pragma(`table_info(${table})`) as Array<{ name: string; type: string }>).map((c) =>
          c.type === 'INTEGER' ? `(CASE WHEN ${c.name} IS NULL THEN 0 ELSE 8 END)` : `coalesce(length(CAST(${c.name} AS BLOB)), 0)`,
        );
        return db(store)
          .prepare(`SELECT count(*) AS n, coalesce(sum(${columns.join(' + ')}), 0) AS b FROM ${table} WHERE ${key} IN (SELECT value FROM json_each(?))`)
          .get(list) as { n: number; b: number };
      };
      const a = sum('task_audit', 'task_id');
      const r = sum('task_read_audit', 'task_key');
      return { rows: a.n + r.n, bytes: a.b + r.b };
    },
  };
}

function postgresDialect(pg: BenchPostgres): Dialect {
  const pool = (store: TaskStore) => (store as PostgresStore).pool;
  return {
    name: 'postgres',
    open: (label) => PostgresStore.open(pg.schemaUrl(`audit_${label}`)),
    // Autovacuum's defaults (a pass a minute once 50 + 20 % of the rows changed) reach this table
    // every minute of a real hour; the simulated hour runs the same pass itself.
    minutely: async (store) => {
      await pool(store).query('VACUUM task_read_audit');
    },
    disk: async (store) => {
      const found = await pool(store).query<{ b: string }>(
        `SELECT (pg_total_relation_size('task_audit') + pg_total_relation_size('task_read_audit'))::bigint AS b`,
      );
      return Number(found.rows[0]?.b ?? 0);
    },
    rows: async (store, ids) => {
      const found = await pool(store).query<{ n: string; b: string }>(
        `SELECT (SELECT count(*) FROM task_audit WHERE task_id = ANY($1)) + (SELECT count(*) FROM task_read_audit WHERE task_key = ANY($1)) AS n,
                (SELECT coalesce(sum(pg_column_size(a.*)), 0) FROM task_audit a WHERE task_id = ANY($1))
              + (SELECT coalesce(sum(pg_column_size(r.*)), 0) FROM task_read_audit r WHERE task_key = ANY($1)) AS b`,
        [ids],
      );
      return { rows: Number(found.rows[0]?.n ?? 0), bytes: Number(found.rows[0]?.b ?? 0) };
    },
  };
}

/** Audit storage target, per store, with its threshold in its name; appended after `computeRatiosAndTargets`. */
export function addAuditTargets(results: Results): void {
  for (const store of ['sqlite', 'postgres']) {
    const fact = results.facts.find((f) => f.scenario === AUDIT_SCENARIO && f.name === `${store}: ${AUDIT_FACT}`);
    if (fact === undefined) continue;
    results.targets.push({ name: `${store}: ${AUDIT_FACT} ≤ 20 KB`, pass: fact.value * 1024 <= 20_000, figure: `${fmt(fact.value)} KiB (${fact.note ?? ''})` });
  }
}
