import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { PostgresStore } from '../src/store/postgres/store.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import type { TaskFilter } from '../src/store/task-operations.js';
import type { TaskStore } from '../src/store/types.js';
import { linkMigrations } from './lib/migrations-link.js';

/**
 * `node dist/bench/bench/console-page-probe.js [sqlite|postgres]`: how long the web console's
 * list takes for one page of 50 at a million tasks. The tasks are written with one SQL
 * statement (four tools, three tenants, statuses mixed, one in a thousand sleeping and one in a
 * thousand waiting for an event), then each page is read through the store's `findTasks` a few
 * times and the median is printed: the first page, a page deep in the list (keyset: after the
 * 500 000th task), and the first page of each filter; then the first pages again without the
 * creation-order index, to show what it saves.
 */
const TASKS = Number(process.env.TASKLATCH_CONSOLE_TASKS ?? 1_000_000);
const PAGE = 50;
const T0 = 1_750_000_000_000;

const fill = {
  tasks: (series: string, id: string) => `
    INSERT INTO tasks (task_id, auth_key, app, tool_name, status, version, created_at_ms, last_updated_at_ms)
    SELECT 'task-' || lpad(${id}::text, 8, '0'),
           (ARRAY['acme/alice', 'globex/bob', 'initech/eve'])[${id} % 3 + 1],
           'default',
           (ARRAY['export_ledger', 'import_csv', 'deploy', 'report'])[${id} % 4 + 1],
           CASE WHEN ${id} % 1000 IN (1, 2) THEN 'working' WHEN ${id} % 7 = 0 THEN 'failed' WHEN ${id} % 5 = 0 THEN 'working' ELSE 'completed' END,
           1, ${T0} + ${id} * 10, ${T0} + ${id} * 10
      FROM ${series}`,
  steps: (series: string, id: string) => `
    INSERT INTO task_steps (task_id, position, name, kind, status, attempts, value_bytes, wake_at_ms, started_at_ms, updated_at_ms)
    SELECT 'task-' || lpad(${id}::text, 8, '0'), 0, 'wait',
           CASE WHEN ${id} % 1000 = 1 THEN 'sleep' ELSE 'event' END,
           CASE WHEN ${id} % 1000 = 1 THEN 'sleeping' ELSE 'waiting' END,
           0, 0, ${T0} + 10 * ${TASKS} + 3600000, ${T0}, ${T0}
      FROM ${series} WHERE ${id} % 1000 IN (1, 2)`,
};

const FILTERS: Array<[string, TaskFilter]> = [
  ['no filter', {}],
  ['status failed', { status: 'failed' }],
  ['tenant globex', { tenant: 'globex' }],
  ['tool deploy', { tool: 'deploy' }],
  ['sleeping', { sleeping: true }],
  ['waiting for an event', { waitingForEvent: true }],
];

async function median(read: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await read();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[2]!;
}

async function probe(kind: string, store: TaskStore, dropIndex: () => Promise<void>): Promise<void> {
  const lines: string[] = [];
  for (const [name, filter] of FILTERS) {
    const page = await store.findTasks({ filter, after: null, limit: PAGE });
    lines.push(`${name}: ${(await median(() => store.findTasks({ filter, after: null, limit: PAGE }))).toFixed(2)} ms (${page.records.length} rows)`);
  }
  const middle = { createdAt: T0 + (TASKS / 2) * 10, taskId: `task-${String(TASKS / 2).padStart(8, '0')}` };
  lines.push(`deep page (after task ${TASKS / 2}): ${(await median(() => store.findTasks({ filter: {}, after: middle, limit: PAGE }))).toFixed(2)} ms`);
  // The same first pages without the creation-order index (018/019_console.sql): what it saves.
  await dropIndex();
  for (const [name, filter] of FILTERS.slice(0, 2)) {
    lines.push(`${name}, without the index: ${(await median(() => store.findTasks({ filter, after: null, limit: PAGE }))).toFixed(2)} ms`);
  }
  console.log(`${kind}, ${TASKS} tasks, a page of ${PAGE}, median of 5:\n  ${lines.join('\n  ')}`);
}

async function onSqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tasklatch-console-'));
  try {
    const store = await SqliteStore.open(join(dir, 'console.db'));
    const db = (store as unknown as { db: { exec(sql: string): void } }).db;
    const series = `(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${TASKS}) SELECT i FROM n)`;
    db.exec(
      `BEGIN; ${fill
        .tasks(series, 'i')
        .replace(/lpad\(i::text, 8, '0'\)/g, "substr('0000000' || i, -8, 8)")
        .replace(/\(ARRAY\[([^\]]*)\]\)\[([^\]]*)\]/g, (_m, list: string, at: string) =>
          sqliteArray(list, at),
        )}; ${fill.steps(series, 'i').replace(/lpad\(i::text, 8, '0'\)/g, "substr('0000000' || i, -8, 8)")}; COMMIT; ANALYZE;`,
    );
    await probe('SQLite', store, async () => db.exec('DROP INDEX tasks_created_idx'));
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `(ARRAY[a, b, c])[k % n + 1]` as SQLite says it. */
function sqliteArray(list: string, at: string): string {
  const items = list.split(',').map((s) => s.trim());
  return `CASE ${at.replace(/ \+ 1$/, '')} ${items.map((item, i) => `WHEN ${i} THEN ${item}`).join(' ')} END`;
}

async function onPostgres(): Promise<void> {
  const url = process.env.TASKLATCH_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `tl_console_probe_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    const store = await PostgresStore.open(`${url}?schema=${schema}`);
    await admin.query(`SET search_path = ${schema}`);
    await admin.query(fill.tasks(`generate_series(1, ${TASKS}) AS g(i)`, 'i'));
    await admin.query(fill.steps(`generate_series(1, ${TASKS}) AS g(i)`, 'i'));
    await admin.query('VACUUM ANALYZE tasks');
    await admin.query('VACUUM ANALYZE task_steps');
    await probe('PostgreSQL', store, async () => void (await admin.query('DROP INDEX tasks_created')));
    await store.close();
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

linkMigrations();
const which = process.argv[2] ?? 'both';
if (which !== 'postgres') await onSqlite();
if (which !== 'sqlite') await onPostgres();
