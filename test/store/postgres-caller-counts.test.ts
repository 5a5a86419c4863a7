import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratePostgres } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl, schemaOf, testServerUrl } from '../support/postgres.js';
import { pgAdmission as admission, PG_NOW as NOW, record } from '../support/records.js';

// Each caller's row count (task_caller_counts, migration 019), which lets an admission under the
// stored-task bound skip counting the caller's tasks. It must equal the rows of tasks per auth key
// after every write, whatever path made it: an admission with or without a bound, a seed that
// moves a task to another caller, the retention sweep, SQL of its own under another search_path.

const A = 'tenant-a/alice';
const B = 'tenant-b/bob';
const C = 'tenant-c/carol';
const DAY = 86_400_000;

interface Count {
  auth_key: string;
  n: number;
}

async function counted(store: PostgresStore): Promise<Count[]> {
  return (await store.pool.query<Count>('SELECT auth_key, stored::int AS n FROM task_caller_counts ORDER BY auth_key')).rows;
}

async function stored(store: PostgresStore): Promise<Count[]> {
  return (await store.pool.query<Count>('SELECT auth_key, count(*)::int AS n FROM tasks GROUP BY auth_key ORDER BY auth_key')).rows;
}

describe('PostgreSQL caller counts', () => {
  let url: string;
  let store: PostgresStore;

  beforeAll(async () => {
    url = await freshPostgresUrl('pg_caller_counts');
    store = await PostgresStore.open(url);
  });
  afterAll(async () => store.close());

  it('follow admissions, a seed that moves a task to another caller, the retention sweep and SQL under another search_path', async () => {
    const admitted: string[] = [];
    for (let i = 0; i < 5; i++) {
      const out = await store.admit(admission({ authKey: A, ttl: DAY, maxStored: i % 2 === 0 ? 100 : null }));
      admitted.push(out.record!.taskId);
    }
    // Concurrent admissions share write batches.
    await Promise.all(Array.from({ length: 6 }, (_, i) => store.admit(admission({ authKey: i % 2 === 0 ? B : A, ttl: DAY, maxStored: 100 }))));
    expect(await counted(store)).toEqual([
      { auth_key: A, n: 8 },
      { auth_key: B, n: 3 },
    ]);

    // Seeding replaces a record verbatim: here it moves one of A's tasks to C.
    await store.seed([record({ taskId: admitted[0], authKey: C, expiresAt: NOW + DAY })]);
    expect(await counted(store)).toEqual(await stored(store));
    expect((await counted(store)).find((c) => c.auth_key === C)?.n).toBe(1);

    // The retention sweep removes C's task: C's count goes with it.
    await store.pool.query('UPDATE tasks SET expires_at_ms = $2 WHERE task_id = $1', [admitted[0], NOW - DAY]);
    expect((await store.sweepExpired({ now: NOW, limit: 10, retentionMs: 0 })).tasks).toBe(1);
    expect(await counted(store)).toEqual([
      { auth_key: A, n: 7 },
      { auth_key: B, n: 3 },
    ]);

    // A delete on a connection whose search_path does not name the schema still counts there.
    const other = new pg.Client({ connectionString: testServerUrl() });
    await other.connect();
    try {
      await other.query(`DELETE FROM "${schemaOf(url)}".tasks WHERE auth_key = $1 AND task_id = ANY($2)`, [A, admitted.slice(1, 3)]);
      await other.query(`DELETE FROM "${schemaOf(url)}".tasks WHERE auth_key = $1`, [B]);
    } finally {
      await other.end();
    }
    expect(await counted(store)).toEqual([{ auth_key: A, n: 5 }]);
    expect(await counted(store)).toEqual(await stored(store));
  });

  it('count a statement of many rows once per caller, and stay exact under admissions over several handles racing the retention sweep', async () => {
    const bulk = await freshPostgresUrl('pg_caller_counts_bulk');
    const handles = await Promise.all([PostgresStore.open(bulk), PostgresStore.open(bulk), PostgresStore.open(bulk)]);
    try {
      const [first] = handles;
      await first.pool.query(
        `INSERT INTO tasks (task_id, auth_key, status, version, created_at_ms, last_updated_at_ms, expires_at_ms)
         SELECT 'bulk-' || i, (ARRAY[$1, $2, $3])[i % 3 + 1], 'completed', 2, 0, 0, CASE WHEN i % 2 = 0 THEN $4::bigint ELSE $5::bigint END
           FROM generate_series(1, 3000) AS i`,
        [A, B, C, NOW - 1, NOW + DAY],
      );
      expect(await counted(first)).toEqual([
        { auth_key: A, n: 1000 },
        { auth_key: B, n: 1000 },
        { auth_key: C, n: 1000 },
      ]);
      // Admissions of the three callers over three handles while sweeps on two of them remove the
      // expired half in batches: the counts' rows are locked by both, and neither waits forever.
      const admissions = Array.from({ length: 48 }, (_, i) =>
        handles[i % 3]!.admit(admission({ authKey: [A, B, C][i % 3]!, ttl: DAY, maxStored: 5000, correlationId: `c-${i}` })),
      );
      const sweeps = [1, 2].map(async (h) => {
        let removed = 0;
        for (;;) {
          const out = await handles[h]!.sweepExpired({ now: NOW, limit: 100, retentionMs: 0 });
          removed += out.tasks;
          if (!out.more) return removed;
        }
      });
      expect(new Set((await Promise.all(admissions)).map((o) => o.decision))).toEqual(new Set(['ACCEPT_TASK']));
      expect((await Promise.all(sweeps)).reduce((a, b) => a + b, 0)).toBe(1500);
      expect(await counted(first)).toEqual([
        { auth_key: A, n: 516 },
        { auth_key: B, n: 516 },
        { auth_key: C, n: 516 },
      ]);
      expect(await counted(first)).toEqual(await stored(first));
    } finally {
      await Promise.all(handles.map((h) => h.close()));
    }
  });

  it('holds the bound from the count: at the bound by rows it counts the unexpired tasks, under it it admits', async () => {
    const D = 'tenant-d/dora';
    for (let i = 0; i < 3; i++) await store.admit(admission({ authKey: D, ttl: 1000, maxStored: 3 }));
    expect(await store.admit(admission({ authKey: D, ttl: 1000, maxStored: 3 }))).toEqual({ decision: 'BLOCK_STORED_LIMIT', record: null });
    // Three rows, none of them unexpired an hour later: the count is at the bound, the bound's own count is 0.
    const later = NOW + 3_600_000;
    expect((await store.admit(admission({ authKey: D, ttl: 1000, maxStored: 3, now: later }))).decision).toBe('ACCEPT_TASK');
    expect((await counted(store)).find((c) => c.auth_key === D)?.n).toBe(4);
    expect((await store.admit(admission({ authKey: D, ttl: 1000, maxStored: 5, now: later }))).decision).toBe('ACCEPT_TASK');
    expect(await store.admit(admission({ authKey: D, ttl: 1000, maxStored: 2, now: later }))).toEqual({ decision: 'BLOCK_STORED_LIMIT', record: null });
  });

  it('are filled in from the rows a schema already holds when it migrates to 019', async () => {
    const fresh = await freshPostgresUrl('pg_caller_counts_upgrade');
    const before = await PostgresStore.open(fresh);
    try {
      await before.admit(admission({ authKey: A }));
      // The schema as 018 left it, with rows written without the triggers.
      await before.pool.query(`DROP TABLE task_caller_counts;
        DROP FUNCTION tasklatch_count_inserted, tasklatch_count_deleted, tasklatch_count_moved, tasklatch_count_truncated CASCADE;
        DELETE FROM tasklatch_migrations WHERE name = '019_caller_counts.sql'`);
      await before.seed([0, 1, 2].map((i) => record({ taskId: `seeded-${i}`, authKey: i === 0 ? A : B })));
      expect(await migratePostgres(fresh)).toEqual(['019_caller_counts.sql']);
      expect(await counted(before)).toEqual([
        { auth_key: A, n: 2 },
        { auth_key: B, n: 2 },
      ]);
      await before.admit(admission({ authKey: B }));
      expect(await counted(before)).toEqual(await stored(before));
    } finally {
      await before.close();
    }
  });
});
