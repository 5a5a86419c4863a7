import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { readPostgresMigrations } from '../../src/store/postgres/migrate.js';
import { sql } from '../../src/store/postgres/statements.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { ClaimInput } from '../../src/store/types.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { PG_NOW as NOW, pgAdmission as admission } from '../support/records.js';

// PostgreSQL-only parts of apps on one schema: a schema from before 006 keeps its tasks
// (they become the default app's), and the claim of one app reads only that app's outbox
// entries through task_outbox_app_dispatch, however many of another app's are due before them.

const open: PostgresStore[] = [];
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await Promise.all(clients.splice(0).map((c) => c.end()));
});

const claimOf = (owner: string, extra: Partial<ClaimInput> = {}): ClaimInput => ({
  owner,
  now: NOW + 10,
  leaseMs: 60_000,
  limit: 10,
  maxAttempts: 3,
  abandonedResult: null,
  correlationId: `claim-${owner}`,
  tools: ['build_report'],
  ...extra,
});

/** A client whose search_path is the URL's schema, created here as the store would. */
async function schemaClient(url: string): Promise<pg.Client> {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema')!;
  parsed.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: parsed.toString() });
  clients.push(client);
  await client.connect();
  await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await client.query(`SET search_path TO "${schema}"`);
  return client;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

describe('PostgreSQL apps on one schema', () => {
  it("migrates a schema from before apps: its tasks become the default app's, claimable as before", async () => {
    const url = await freshPostgresUrl('pg_app_upgrade');
    const client = await schemaClient(url);
    // The schema as 005 left it, with a task admitted then and its open outbox entry.
    await client.query('CREATE TABLE tasklatch_migrations (name text PRIMARY KEY, applied_at_ms bigint NOT NULL, checksum text)');
    for (const file of (await readPostgresMigrations()).filter((f) => f.name < '006')) {
      await client.query(file.sql);
      await client.query('INSERT INTO tasklatch_migrations (name, applied_at_ms, checksum) VALUES ($1, 0, $2)', [file.name, file.checksum]);
    }
    await client.query(
      `INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms)
       VALUES ('old-task', 'tenant-a/alice', 'build_report', 'working', 1, $1, $1)`,
      [NOW],
    );
    await client.query(`INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms) VALUES ('old-task', $1, $1)`, [NOW]);

    const store = await PostgresStore.open(url);
    open.push(store);
    // Every migration from 006 on, in order (the later ones are other tests' concern).
    const later = (await readPostgresMigrations()).map((f) => f.name).filter((name) => name >= '006');
    expect(later.slice(0, 2)).toEqual(['006_task_app.sql', '007_read_audit.sql']);
    expect(store.migrationsApplied).toEqual(later);
    const before = await store.get({ authKey: 'tenant-a/alice', taskId: 'old-task', now: NOW + 1 });
    expect(before.record).toMatchObject({ app: 'default', toolDigest: null, version: 1 });
    expect(await store.claim(claimOf('w-other', { app: 'billing' }))).toEqual([]);
    const claimed = await store.claim(claimOf('w-default', { app: 'default' }));
    expect(claimed.map((r) => [r.taskId, r.app, r.leaseOwner])).toEqual([['old-task', 'default', 'w-default']]);
  });

  it("reads only the claimer's app's entries, through the app's index, with another app's due first", async () => {
    const url = await freshPostgresUrl('pg_app_plan');
    const store = await PostgresStore.open(url, { poolSize: 2 });
    open.push(store);
    // 20000 entries of one app due before the other app's three: a claim that filtered after
    // reading would read all of them first.
    await store.pool.query(
      `INSERT INTO tasks (task_id, auth_key, app, tool_name, status, version, created_at_ms, last_updated_at_ms)
       SELECT 'big-' || g, 'tenant-a/alice', 'big', 'build_report', 'working', 1, $1::bigint, $1::bigint FROM generate_series(1, 20000) g`,
      [NOW - 1000],
    );
    await store.pool.query(
      `INSERT INTO task_outbox (task_id, app, created_at_ms, available_at_ms) SELECT task_id, app, created_at_ms, created_at_ms FROM tasks`,
    );
    const small = [];
    for (let i = 0; i < 3; i++) small.push((await store.admit(admission({ toolName: 'build_report', app: 'small' }))).record!);
    await store.pool.query('ANALYZE tasks; ANALYZE task_outbox');

    const params = [NOW + 10, Number.MIN_SAFE_INTEGER, '0', 10, ['build_report'], 'small', null, [], []];
    const client = await store.pool.connect();
    try {
      await client.query('BEGIN');
      for (const mode of ['auto', 'force_generic_plan']) {
        // A generic plan is what a prepared statement runs after its first executions.
        await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
        const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql.dueOutboxOfApp}`, params);
        const nodes = nodesOf(explained.rows[0]!['QUERY PLAN'][0].Plan);
        const outbox = nodes.filter((n) => n['Relation Name'] === 'task_outbox');
        expect(
          outbox.map((n) => n['Index Name']),
          mode,
        ).toEqual(['task_outbox_app_dispatch']);
        const read = outbox.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
        expect(read, mode).toBe(3);
        console.log(JSON.stringify({ appClaimPlan: { mode, outboxIndex: outbox[0]!['Index Name'], outboxRowsRead: read, otherAppDue: 20000 } }));
      }
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }

    const claimed = await store.claim(claimOf('w-small', { app: 'small' }));
    expect(claimed.map((r) => r.taskId).sort()).toEqual(small.map((r) => r.taskId).sort());
    const untouched = await store.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tasks WHERE app = 'big' AND version = 1 AND attempt = 0 AND lease_owner IS NULL`,
    );
    expect(untouched.rows[0]!.n).toBe(20000);
  });
});
