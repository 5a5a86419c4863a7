import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_RETENTION_MS, sweepStore } from '../src/service/expiry-sweeper.js';
import { openGuard } from '../src/service/guard.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import type { AuditEntry, TaskStore } from '../src/store/types.js';
import { record } from '../test/support/records.js';
import { linkMigrations } from './lib/migrations-link.js';
import { openBenchPostgres } from './lib/postgres.js';

/**
 * `npm run bench:audit`: what the audit trail and retention cost in storage, on SQLite and
 * PostgreSQL, with a simulated clock.
 *
 * 1. One task polled at 1 Hz for an hour (3,600 `tasks/get` through the guard): audit rows and
 *    bytes for that task as stored now (aggregated reads), against one `task_audit` line per poll
 *    (the behaviour before aggregation, measured by writing those lines to the same store).
 * 2. 100,000 finished tasks, each with its two write lines and a read row: store size before and
 *    after one retention sweep removes them (and after VACUUM, which gives the space back to the
 *    file system; without it the space is reused by later rows).
 */

const HOUR = 3_600_000;
const A = 'tenant-a/alice';
const TASKS = Number(process.env.TASKLATCH_BENCH_AUDIT_TASKS ?? 100_000);

interface Dialect {
  name: string;
  open(label: string): Promise<TaskStore>;
  /** Rows and bytes of both audit tables that concern one task. */
  auditOf(store: TaskStore, taskId: string): Promise<{ rows: number; bytes: number }>;
  /** Bytes of the tasks, outbox, inputs and both audit tables. */
  size(store: TaskStore): Promise<number>;
  /** The same, after the database gives freed space back (VACUUM). */
  vacuum(store: TaskStore): Promise<void>;
  /** N finished tasks (no ttl, last update at `at`), each with two write lines and a read row. */
  fill(store: TaskStore, n: number, at: number): Promise<void>;
  /** One exact `task_audit` line per poll: what each poll wrote before aggregation. */
  writeLines(store: TaskStore, lines: readonly AuditEntry[]): Promise<void>;
}

const TABLES = ['tasks', 'task_outbox', 'task_inputs', 'task_audit', 'task_read_audit'];

function sqliteDialect(dir: string): Dialect {
  const db = (store: TaskStore) => (store as SqliteStore).db;
  return {
    name: 'sqlite',
    open: (label) => SqliteStore.open(join(dir, `${label}.db`)),
    auditOf: async (store, taskId) => {
      const rowBytes = (table: string, where: string) =>
        db(store)
          .prepare(`SELECT count(*) AS n, coalesce(sum(${bytesOfRow(db(store), table)}), 0) AS b FROM ${table} WHERE ${where}`)
          .get(taskId) as { n: number; b: number };
      const lines = rowBytes('task_audit', 'task_id = ?');
      const reads = rowBytes('task_read_audit', 'task_key = ?');
      return { rows: lines.n + reads.n, bytes: lines.b + reads.b };
    },
    size: async (store) => {
      db(store).pragma('wal_checkpoint(TRUNCATE)');
      return (await stat(db(store).name)).size;
    },
    vacuum: async (store) => {
      db(store).exec('VACUUM');
    },
    fill: async (store, n, at) => {
      const d = db(store);
      d.exec('BEGIN');
      d.prepare(
        `WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < ?)
         INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, request, result, correlation_id, attempt)
         SELECT 'fin-' || k, ?, 'export_ledger', 'completed', 3, ?, ?, '{"method":"tools/call","params":{"name":"export_ledger","arguments":{"month":"2026-06"}}}',
                '{"content":[{"type":"text","text":"done"}],"isError":false}', 'corr-' || k, 1 FROM i`,
      ).run(n, A, at - 60_000, at);
      d.prepare(
        `INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms, attempt, done_at_ms) SELECT task_id, created_at_ms, created_at_ms, 1, ? FROM tasks WHERE task_id LIKE 'fin-%'`,
      ).run(at);
      d.prepare(
        `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
         SELECT created_at_ms, 'create', 'ACCEPT_TASK', auth_key, task_id, correlation_id, NULL, NULL, NULL FROM tasks WHERE task_id LIKE 'fin-%'
         UNION ALL
         SELECT last_updated_at_ms, 'transition', 'APPLY_TRANSITION', auth_key, task_id, correlation_id, 'completed', 3, NULL FROM tasks WHERE task_id LIKE 'fin-%'`,
      ).run();
      d.prepare(
        `INSERT INTO task_read_audit (task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, task_id, correlation_id, status, version)
         SELECT task_id, auth_key, 'read', 'RETURN_STATUS', (created_at_ms / ${HOUR}) * ${HOUR}, 60, created_at_ms, last_updated_at_ms, task_id, correlation_id, 'completed', 3
           FROM tasks WHERE task_id LIKE 'fin-%'`,
      ).run();
      d.exec('COMMIT');
    },
    writeLines: async (store, lines) => {
      const insert = db(store).prepare(
        `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
         VALUES (@at, @surface, @decision, @authKey, @taskId, @correlationId, @status, @version, NULL)`,
      );
      db(store).transaction(() => lines.forEach((l) => insert.run({ ...l, status: l.status ?? null, version: l.version ?? null })))();
    },
  };
}

/** SQLite's bytes of a row's values (its record payload without the page overhead): the sum of each column's length. */
function bytesOfRow(db: SqliteStore['db'], table: string): string {
  const columns = (db.pragma(`table_info(${table})`) as Array<{ name: string; type: string }>).map((c) =>
    c.type === 'INTEGER' ? `(CASE WHEN ${c.name} IS NULL THEN 0 ELSE 8 END)` : `coalesce(length(CAST(${c.name} AS BLOB)), 0)`,
  );
  return columns.join(' + ');
}

function postgresDialect(schemaUrl: (label: string) => string): Dialect {
  const pool = (store: TaskStore) => (store as PostgresStore).pool;
  return {
    name: 'postgres',
    open: (label) => PostgresStore.open(schemaUrl(label)),
    auditOf: async (store, taskId) => {
      const found = await pool(store).query<{ n: number; b: number }>(
        `SELECT (SELECT count(*) FROM task_audit WHERE task_id = $1) + (SELECT count(*) FROM task_read_audit WHERE task_key = $1) AS n,
                (SELECT coalesce(sum(pg_column_size(a.*)), 0) FROM task_audit a WHERE task_id = $1)
              + (SELECT coalesce(sum(pg_column_size(r.*)), 0) FROM task_read_audit r WHERE task_key = $1) AS b`,
        [taskId],
      );
      return { rows: Number(found.rows[0]?.n ?? 0), bytes: Number(found.rows[0]?.b ?? 0) };
    },
    size: async (store) => {
      const found = await pool(store).query<{ b: string }>(`SELECT sum(pg_total_relation_size(t::regclass))::bigint AS b FROM unnest($1::text[]) AS t`, [
        TABLES,
      ]);
      return Number(found.rows[0]?.b ?? 0);
    },
    vacuum: async (store) => {
      for (const table of TABLES) await pool(store).query(`VACUUM FULL ${table}`);
    },
    fill: async (store, n, at) => {
      const p = pool(store);
      await p.query(
        `INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, request, result, correlation_id, attempt)
         SELECT 'fin-' || k, $2, 'export_ledger', 'completed', 3, $3, $4, '{"method":"tools/call","params":{"name":"export_ledger","arguments":{"month":"2026-06"}}}',
                '{"content":[{"type":"text","text":"done"}],"isError":false}', 'corr-' || k, 1 FROM generate_series(1, $1) AS k`,
        [n, A, at - 60_000, at],
      );
      await p.query(
        `INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms, attempt, done_at_ms) SELECT task_id, created_at_ms, created_at_ms, 1, $1 FROM tasks`,
        [at],
      );
      await p.query(
        `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
         SELECT created_at_ms, 'create', 'ACCEPT_TASK', auth_key, task_id, correlation_id, NULL, NULL, NULL FROM tasks
         UNION ALL
         SELECT last_updated_at_ms, 'transition', 'APPLY_TRANSITION', auth_key, task_id, correlation_id, 'completed', 3, NULL FROM tasks`,
      );
      await p.query(
        `INSERT INTO task_read_audit (task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, task_id, correlation_id, status, version)
         SELECT task_id, auth_key, 'read', 'RETURN_STATUS', (created_at_ms / ${HOUR}) * ${HOUR}, 60, created_at_ms, last_updated_at_ms, task_id, correlation_id, 'completed', 3
           FROM tasks`,
      );
      await p.query('ANALYZE');
    },
    writeLines: async (store, lines) => {
      const p = pool(store);
      await p.query(
        `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[])`,
        [
          lines.map((l) => l.at),
          lines.map((l) => l.surface),
          lines.map((l) => l.decision),
          lines.map((l) => l.authKey),
          lines.map((l) => l.taskId),
          lines.map((l) => l.correlationId),
          lines.map((l) => l.status ?? null),
          lines.map((l) => l.version ?? null),
        ],
      );
    },
  };
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

async function pollHour(dialect: Dialect): Promise<void> {
  const t0 = Date.UTC(2026, 6, 23, 12, 0, 0);
  const clock = { now: t0 };
  const after = await dialect.open('poll_after');
  const before = await dialect.open('poll_before');
  try {
    await after.seed([record({ taskId: 'polled', createdAt: t0, lastUpdatedAt: t0, expiresAt: t0 + 24 * HOUR })]);
    const guard = openGuard({ store: after, capabilities: { cancel: {} }, clock: () => clock.now });
    const oldLines: AuditEntry[] = [];
    for (let i = 0; i < 3600; i++) {
      clock.now = t0 + i * 1000;
      const correlationId = `poll-${String(i).padStart(4, '0')}-${'x'.repeat(27)}`; // a UUID's length
      await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: 'polled', correlationId });
      oldLines.push({ at: clock.now, surface: 'read', decision: 'RETURN_STATUS', authKey: A, taskId: 'polled', correlationId, status: 'working', version: 1 });
    }
    await after.auditTrail({ taskId: 'polled' }); // drains the writer
    await dialect.writeLines(before, oldLines);
    const now = await dialect.auditOf(after, 'polled');
    const old = await dialect.auditOf(before, 'polled');
    console.log(`${dialect.name}: one task polled at 1 Hz for an hour (3,600 tasks/get)`);
    console.log(`  before (one task_audit line per poll): ${old.rows} rows, ${kb(old.bytes)} of row data`);
    console.log(`  after  (aggregated per caller, decision and hour): ${now.rows} rows, ${kb(now.bytes)} of row data`);
  } finally {
    await after.close();
    await before.close();
  }
}

async function retention(dialect: Dialect): Promise<void> {
  const store = await dialect.open('retention');
  try {
    const at = Date.UTC(2026, 6, 1);
    const fillStarted = performance.now();
    await dialect.fill(store, TASKS, at);
    const filled = await dialect.size(store);
    console.log(
      `${dialect.name}: ${TASKS.toLocaleString('en')} finished tasks, 2 write lines and 1 read row each (filled in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s)`,
    );
    console.log(`  store size before the sweep: ${mb(filled)}`);
    const started = performance.now();
    const gone = await sweepStore(store, {
      now: at + DEFAULT_RETENTION_MS + HOUR,
      retentionMs: DEFAULT_RETENTION_MS,
      batchSize: 500,
      maxBatches: Number.MAX_SAFE_INTEGER,
    });
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `  retention sweep (7 d, batches of 500): ${gone.tasks} tasks and ${gone.auditRows} audit rows in ${seconds.toFixed(1)} s (${Math.round(gone.tasks / seconds)} tasks/s)`,
    );
    console.log(`  store size after the sweep: ${mb(await dialect.size(store))} (freed pages are reused by later rows)`);
    await dialect.vacuum(store);
    console.log(`  store size after VACUUM${dialect.name === 'postgres' ? ' FULL' : ''}: ${mb(await dialect.size(store))}`);
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  linkMigrations();
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-audit-'));
  const pg = await openBenchPostgres();
  try {
    console.log(`PostgreSQL: ${pg.version.split(',')[0] ?? ''} (${pg.origin})\n`);
    for (const dialect of [sqliteDialect(dir), postgresDialect((label) => pg.schemaUrl(label))]) {
      await pollHour(dialect);
      await retention(dialect);
      console.log('');
    }
  } finally {
    await pg.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
