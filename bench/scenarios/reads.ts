import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { getTask } from '../../src/runtime/requests/get-task.js';
import { listTasks } from '../../src/runtime/requests/list-tasks.js';
import { openGuard } from '../../src/service/guard.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { BenchConfig } from '../lib/config.js';
import { memoryClient, tasklatchServer } from '../lib/mcp.js';
import { schemaPool, type BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { READ } from '../lib/targets.js';
import { timeEach } from '../lib/stats.js';

/**
 * The synthetic population, defined once for SQL and for TypeScript: task `i` (1…n) belongs to
 * tenant `i % tenants` (auth key `tenant-K/alice`), was created 50 ms after task i−1, ending
 * two hours before the load; a hash of i picks its status (70 % completed, 10 % each failed,
 * working, cancelled) and puts 10 % of the tasks on a one-hour ttl, so they are expired, spread
 * over every tenant. The rest have the maximum ttl (7 days).
 */
const HASH = 2654435761;
const h = (i: number) => (i * HASH) % 4294967296;
const isExpired = (i: number) => Math.floor(h(i) / 256) % 10 === 3;
const taskId = (i: number) => `${h(i).toString(16).padStart(8, '0')}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const authKey = (tenant: number) => `tenant-${tenant}/alice`;
const SPACING_MS = 50;
const LONG_TTL = 604_800_000;
const SHORT_TTL = 3_600_000;

const CAPABILITIES = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** PostgreSQL bulk load: one INSERT … SELECT over generate_series, then the outbox rows. */
const PG_LOAD = `
INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, ttl_ms, expires_at_ms,
                   poll_interval_ms, request_digest, idempotency_key, request, cancel_requested, result, result_digest, correlation_id, attempt)
SELECT lpad(to_hex(x.h), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(i), 12, '0'),
       'tenant-' || (i % $2) || '/alice',
       'export_ledger',
       x.status,
       CASE WHEN x.status = 'working' THEN 1 ELSE 2 END,
       x.created,
       x.created + CASE WHEN x.status = 'working' THEN 0 ELSE 1500 END,
       x.ttl, x.created + x.ttl, 1000,
       encode(sha256(convert_to('request:' || i, 'UTF8')), 'hex'),
       CASE WHEN i % 4 = 0 THEN 'idem-' || i END,
       jsonb_build_object('method', 'tools/call', 'params', jsonb_build_object('name', 'export_ledger',
         'arguments', jsonb_build_object('month', '2026-06', 'format', 'csv', 'rows', i % 5000, 'delayMs', 0),
         'task', jsonb_build_object('ttl', x.ttl))),
       x.status = 'cancelled',
       CASE WHEN x.status IN ('completed', 'failed') THEN jsonb_build_object(
         'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'exported ' || (i % 5000) || ' rows of 2026-06')),
         'structuredContent', jsonb_build_object('file', '/exports/tenant-' || (i % $2) || '/task_' || i || '.csv', 'rows', i % 5000,
           'sha256', encode(sha256(convert_to('result:' || i, 'UTF8')), 'hex'))) END,
       CASE WHEN x.status IN ('completed', 'failed') THEN encode(sha256(convert_to('digest:' || i, 'UTF8')), 'hex') END,
       md5('c' || i)::uuid::text,
       CASE WHEN x.status = 'working' THEN 0 ELSE 1 END
  FROM generate_series(1, $1::bigint) AS i
 CROSS JOIN LATERAL (SELECT (i * ${HASH}) % 4294967296 AS h) hh
 CROSS JOIN LATERAL (SELECT hh.h,
                            CASE WHEN hh.h % 10 < 7 THEN 'completed' WHEN hh.h % 10 = 7 THEN 'failed' WHEN hh.h % 10 = 8 THEN 'working' ELSE 'cancelled' END AS status,
                            $3::bigint - 7200000 - ($1::bigint - i) * ${SPACING_MS} AS created,
                            CASE WHEN (hh.h / 256) % 10 = 3 THEN ${SHORT_TTL} ELSE ${LONG_TTL} END AS ttl) x`;

const PG_OUTBOX = `
INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms, attempt, done_at_ms)
SELECT task_id, created_at_ms, created_at_ms, 1, CASE WHEN status <> 'working' THEN last_updated_at_ms END FROM tasks`;

/** The same population in SQLite: a recursive CTE in one transaction (no sha256: random digests). */
const SQLITE_LOAD = `
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < @n),
x AS (SELECT i, (i * ${HASH}) % 4294967296 AS h FROM seq),
y AS (SELECT i, h,
             CASE WHEN h % 10 < 7 THEN 'completed' WHEN h % 10 = 7 THEN 'failed' WHEN h % 10 = 8 THEN 'working' ELSE 'cancelled' END AS status,
             @base - 7200000 - (@n - i) * ${SPACING_MS} AS created,
             CASE WHEN (h / 256) % 10 = 3 THEN ${SHORT_TTL} ELSE ${LONG_TTL} END AS ttl
        FROM x)
INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, ttl_ms, expires_at_ms,
                   poll_interval_ms, request_digest, idempotency_key, request, cancel_requested, result, result_digest, correlation_id, attempt)
SELECT printf('%08x-0000-4000-8000-%012x', h, i),
       'tenant-' || (i % @tenants) || '/alice',
       'export_ledger',
       status,
       CASE WHEN status = 'working' THEN 1 ELSE 2 END,
       created,
       created + CASE WHEN status = 'working' THEN 0 ELSE 1500 END,
       ttl, created + ttl, 1000,
       lower(hex(randomblob(32))),
       CASE WHEN i % 4 = 0 THEN 'idem-' || i END,
       json_object('method', 'tools/call', 'params', json_object('name', 'export_ledger',
         'arguments', json_object('month', '2026-06', 'format', 'csv', 'rows', i % 5000, 'delayMs', 0),
         'task', json_object('ttl', ttl))),
       status = 'cancelled',
       CASE WHEN status IN ('completed', 'failed') THEN json_object(
         'content', json_array(json_object('type', 'text', 'text', 'exported ' || (i % 5000) || ' rows of 2026-06')),
         'structuredContent', json_object('file', '/exports/tenant-' || (i % @tenants) || '/task_' || i || '.csv', 'rows', i % 5000,
           'sha256', lower(hex(randomblob(32))))) END,
       CASE WHEN status IN ('completed', 'failed') THEN lower(hex(randomblob(32))) END,
       lower(hex(randomblob(16))),
       CASE WHEN status = 'working' THEN 0 ELSE 1 END
  FROM y`;

const SQLITE_OUTBOX = `
INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms, attempt, done_at_ms)
SELECT task_id, created_at_ms, created_at_ms, 1, CASE WHEN status <> 'working' THEN last_updated_at_ms END FROM tasks`;

function randomLiveTask(n: number, tenants: number, onlyTenants?: number): { taskId: string; auth: string } {
  for (;;) {
    // Task i belongs to tenant i % tenants; with onlyTenants, pick a tenant below it first.
    const i =
      onlyTenants === undefined
        ? 1 + Math.floor(Math.random() * n)
        : Math.floor(Math.random() * onlyTenants) + tenants * Math.floor(Math.random() * Math.floor(n / tenants));
    if (i >= 1 && i <= n && !isExpired(i)) return { taskId: taskId(i), auth: authKey(i % tenants) };
  }
}

/** Scenario 5 on one store: the load is done; reads, then the sweeper. */
async function measure(results: Results, config: BenchConfig, kind: string, store: TaskStore, onSweepDone: () => Promise<string | null>): Promise<void> {
  const scenario = `reads ${kind}`;
  const n = config.readTasks;
  const tenants = config.readTenants;
  const audited = openGuard({ store, capabilities: CAPABILITIES });
  const quiet = openGuard({ store, capabilities: CAPABILITIES, auditReads: false });
  const samples = config.readSamples;

  // tasks/get, audited and not, taking turns so both see the same cache state.
  const gets = Array.from({ length: samples + 100 }, () => randomLiveTask(n, tenants));
  const getOn: number[] = [];
  const getOff: number[] = [];
  for (const [k, target] of gets.entries()) {
    for (const [guard, out] of [
      [audited, getOn],
      [quiet, getOff],
    ] as const) {
      const t0 = performance.now();
      const found = await getTask({ guard }, { auth: target.auth, taskId: target.taskId });
      const dt = performance.now() - t0;
      if (found.kind !== 'task') throw new Error(`tasks/get of ${target.taskId}: ${found.kind}`);
      if (k >= 100) out.push(dt);
    }
  }
  results.addLatency(scenario, READ.getAudited, getOn);
  results.addLatency(scenario, READ.getQuiet, getOff);

  // The same reads through the wire, for ten tenants (one in-memory client each).
  const server = await tasklatchServer(store, { execute: false, listen: false });
  const clients: Client[] = [];
  for (let t = 0; t < 10; t++) clients.push(await memoryClient(server, { tenant: `tenant-${t}`, subject: 'alice' }));
  const wireTargets = Array.from({ length: Math.ceil(samples / 2) + 50 }, () => randomLiveTask(n, tenants, 10));
  const wire = await timeEach(wireTargets.length, async (k) => {
    const target = wireTargets[k] as { taskId: string; auth: string };
    const client = clients[Number(/^tenant-(\d+)\//.exec(target.auth)?.[1])] as Client;
    await client.request({ method: 'tasks/get', params: { taskId: target.taskId } }, GetTaskResultSchema);
  });
  results.addLatency(scenario, READ.getWire, wire.slice(50));
  await Promise.allSettled(clients.map((c) => c.close()));
  await server.close();

  // tasks/list: a first page of a random tenant, and a deep page from a cursor the guard gave.
  const randomTenant = () => authKey(Math.floor(Math.random() * tenants));
  const firstOn: number[] = [];
  const firstOff: number[] = [];
  for (let k = 0; k < samples + 50; k++) {
    const auth = randomTenant();
    for (const [guard, out] of [
      [audited, firstOn],
      [quiet, firstOff],
    ] as const) {
      const t0 = performance.now();
      const page = await listTasks({ guard }, { auth });
      const dt = performance.now() - t0;
      if (page.kind !== 'page' || page.records.length === 0) throw new Error(`tasks/list of ${auth}: empty`);
      if (k >= 50) out.push(dt);
    }
  }
  results.addLatency(scenario, READ.firstAudited, firstOn);
  results.addLatency(scenario, READ.firstQuiet, firstOff);

  const livePerTenant = Math.floor((0.9 * n) / tenants);
  const depth = Math.max(1, Math.min(15, Math.floor(livePerTenant / audited.context.limits.pageSize) - 2));
  const cursors: Array<{ auth: string; cursor: string }> = [];
  for (let k = 0; k < Math.min(100, tenants); k++) {
    const auth = authKey(Math.floor((k * tenants) / Math.min(100, tenants)));
    let cursor: string | undefined;
    for (let p = 0; p < depth; p++) {
      const page = await listTasks({ guard: quiet }, { auth, cursor });
      cursor = page.kind === 'page' ? (page.nextCursor ?? undefined) : undefined;
    }
    if (cursor !== undefined) cursors.push({ auth, cursor });
  }
  const deepOn: number[] = [];
  const deepOff: number[] = [];
  for (let k = 0; k < samples + 50; k++) {
    const at = cursors[Math.floor(Math.random() * cursors.length)] as { auth: string; cursor: string };
    for (const [guard, out] of [
      [audited, deepOn],
      [quiet, deepOff],
    ] as const) {
      const t0 = performance.now();
      const page = await listTasks({ guard }, at);
      const dt = performance.now() - t0;
      if (page.kind !== 'page' || page.records.length === 0) throw new Error(`deep tasks/list of ${at.auth}: empty`);
      if (k >= 50) out.push(dt);
    }
  }
  results.addLatency(scenario, READ.deepAudited, deepOn, `page ${depth + 1} of ~${Math.ceil(livePerTenant / audited.context.limits.pageSize)}`);
  results.addLatency(scenario, READ.deepQuiet, deepOff, `page ${depth + 1}`);

  // The sweeper over the expired tenth, in batches of 1000, within the time budget.
  const batches: number[] = [];
  let deleted = 0;
  const started = performance.now();
  const now = Date.now();
  while (performance.now() - started < config.sweepBudgetMs) {
    const t0 = performance.now();
    // Retention 0: the expired tenth is due at once, as it was before retention.
    const went = (await store.sweepExpired({ now, limit: 1000, retentionMs: 0 })).tasks;
    batches.push(performance.now() - t0);
    deleted += went;
    if (went === 0) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const expected = Math.round(n / 10);
  results.addFact(
    scenario,
    'sweepExpired deletion rate (batches of 1000)',
    deleted / seconds,
    'rows/s',
    `${deleted} of ~${expected} expired rows in ${seconds.toFixed(1)} s${deleted < expected * 0.95 ? ' (time budget reached)' : ''}`,
  );
  results.addLatency(scenario, 'sweepExpired batch of 1000', batches.slice(0, -1).length > 0 ? batches.slice(0, -1) : batches);
  const diagnostic = await onSweepDone();
  if (diagnostic !== null) console.log(diagnostic);
}

async function explain(pool: pg.Pool, label: string, text: string, params: unknown[]): Promise<string> {
  const plan = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
  return `-- ${label}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`;
}

/** Scenario 5: reads at scale on PostgreSQL and SQLite. */
export async function readsAtScale(results: Results, config: BenchConfig, pgServer: BenchPostgres): Promise<void> {
  const n = config.readTasks;
  const tenants = config.readTenants;
  console.log(`\n[5] reads at scale: ${n} tasks over ${tenants} tenants`);

  {
    const schema = pgServer.schemaName('reads');
    const store = await PostgresStore.open(pgServer.schemaUrl('reads'));
    const pool = schemaPool(pgServer.url, schema, 2);
    const t0 = performance.now();
    await pool.query(PG_LOAD, [n, tenants, Date.now()]);
    await pool.query(PG_OUTBOX);
    await pool.query('VACUUM ANALYZE tasks');
    await pool.query('VACUUM ANALYZE task_outbox');
    const size = (await pool.query<{ s: string }>(`SELECT pg_size_pretty(pg_total_relation_size('tasks')) AS s`)).rows[0]?.s ?? '?';
    results.addFact('reads postgres', 'bulk load (tasks + outbox, VACUUM ANALYZE)', (performance.now() - t0) / 1000, 's', `tasks table with indexes: ${size}`);
    const sample = randomLiveTask(n, tenants);
    const plans = [
      await explain(pool, 'tasks/get', `SELECT * FROM tasks WHERE task_id = $1 AND auth_key = $2 AND (expires_at_ms IS NULL OR expires_at_ms > $3)`, [
        sample.taskId,
        sample.auth,
        Date.now(),
      ]),
      await explain(
        pool,
        'tasks/list first page',
        `SELECT * FROM tasks WHERE auth_key = $1 AND (expires_at_ms IS NULL OR expires_at_ms > $2) ORDER BY created_at_ms, task_id LIMIT $3`,
        [sample.auth, Date.now(), 51],
      ),
    ];
    await measure(results, config, 'postgres', store, async () => {
      const sweepPlan = await explain(
        pool,
        'sweep batch, run after the measured sweep (nothing left to delete: shows the access path)',
        `DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [Date.now(), 1000],
      ).catch((e: Error) => e.message);
      results.notes.push(...plans, sweepPlan);
      return null;
    });
    await pool.end();
    await store.close();
  }

  {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-reads-'));
    const store = await SqliteStore.open(join(dir, 'reads.db'));
    const t0 = performance.now();
    store.db.transaction(() => {
      // BigInt binds as INTEGER; a JS number would bind as REAL and print as "72.0".
      store.db.prepare(SQLITE_LOAD).run({ n: BigInt(n), tenants: BigInt(tenants), base: BigInt(Date.now()) });
      store.db.prepare(SQLITE_OUTBOX).run();
    })();
    store.db.exec('ANALYZE');
    results.addFact('reads sqlite', 'bulk load (tasks + outbox, one transaction, ANALYZE)', (performance.now() - t0) / 1000, 's');
    await measure(results, config, 'sqlite', store, async () => {
      // The sweeper's ON DELETE CASCADE deletes outbox rows by task_id: the plan shows whether
      // that is an index search or a scan of the whole outbox per deleted task.
      const plan = store.db.prepare('EXPLAIN QUERY PLAN DELETE FROM task_outbox WHERE task_id = ?').all('x') as Array<{ detail: string }>;
      results.notes.push(`-- sqlite: plan of the cascade's child delete\n${plan.map((p) => p.detail).join('\n')}`);
      return null;
    });
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}
