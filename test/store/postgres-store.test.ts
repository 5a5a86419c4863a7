import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { migratePostgres, readPostgresMigrations } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { pgAdmission as admission, PG_NOW as NOW } from '../support/records.js';
import { prng } from '../support/sqlite-race-plan.js';

// PostgreSQL-only behaviour: the schema a fresh database gets, migrations under concurrency,
// ?schema= isolation, connection failures, and the races the unique index and the conditional
// UPDATE exist for. The behaviour shared with the other stores is in store-suite.test.ts.


function schemaOf(url: string): string {
  return new URL(url).searchParams.get('schema') ?? '';
}


/** Every table, column, type and nullability tasklatch's migrations create. */
const EXPECTED_COLUMNS = `
task_audit: id bigint NO, at_ms bigint YES, surface text YES, decision text YES, auth_key text YES, task_id text YES,
  correlation_id text YES, status text YES, version integer YES, detail text YES
task_outbox: id bigint NO, task_id text NO, created_at_ms bigint NO, available_at_ms bigint NO, claimed_by text YES,
  lease_expires_at_ms bigint YES, attempt integer NO, done_at_ms bigint YES
tasklatch_meta: key text NO, value text NO
tasklatch_migrations: name text NO, applied_at_ms bigint NO, checksum text YES
tasks: task_id text NO, auth_key text NO, tool_name text YES, status text NO, status_message text YES, version integer NO,
  created_at_ms bigint NO, last_updated_at_ms bigint NO, ttl_ms bigint YES, expires_at_ms bigint YES,
  poll_interval_ms integer YES, request_digest text YES, idempotency_key text YES, request jsonb YES,
  cancel_requested boolean NO, result jsonb YES, result_digest text YES, correlation_id text YES, attempt integer NO,
  lease_owner text YES, lease_expires_at_ms bigint YES`;

const EXPECTED_INDEXES = [
  'task_audit USING btree (task_id, id)',
  'task_audit USING btree (id)',
  'task_outbox USING btree (available_at_ms, id) WHERE (done_at_ms IS NULL)',
  'task_outbox USING btree (id)',
  'task_outbox USING btree (task_id)',
  'tasklatch_meta USING btree (key)',
  'tasklatch_migrations USING btree (name)',
  'tasks USING btree (auth_key) WHERE (status = ANY (ARRAY[\'working\'::text, \'input_required\'::text]))',
  'tasks USING btree (auth_key, created_at_ms, task_id)',
  'tasks USING btree (auth_key, idempotency_key)',
  'tasks USING btree (expires_at_ms) WHERE (expires_at_ms IS NOT NULL)',
  'tasks USING btree (task_id)',
];

describe('PostgresStore schema and migrations', () => {
  let url: string;
  let store: PostgresStore;

  beforeAll(async () => {
    url = await freshPostgresUrl('pg_schema');
    store = await PostgresStore.open(url);
  });
  afterAll(async () => store.close());

  it('migrating from zero gives exactly the expected tables, columns and indexes', async () => {
    const columns = await store.pool.query<{ table_name: string; line: string }>(
      `SELECT table_name, string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position) AS line
         FROM information_schema.columns WHERE table_schema = $1 GROUP BY table_name ORDER BY table_name`,
      [schemaOf(url)],
    );
    const actual = columns.rows.map((r) => `${r.table_name}: ${r.line}`).join('\n');
    expect(actual).toBe(EXPECTED_COLUMNS.trim().replace(/,\n\s+/g, ', '));

    const indexes = await store.pool.query<{ def: string }>(
      `SELECT regexp_replace(indexdef, '^CREATE (UNIQUE )?INDEX \\S+ ON \\S+\\.', '') AS def
         FROM pg_indexes WHERE schemaname = $1 ORDER BY 1`,
      [schemaOf(url)],
    );
    expect(indexes.rows.map((r) => r.def)).toEqual([...EXPECTED_INDEXES].sort());
  });

  it('orders task ids by code point (COLLATE "C") and refuses unknown statuses', async () => {
    const collation = await store.pool.query<{ c: string }>(
      `SELECT collation_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'tasks' AND column_name = 'task_id'`,
      [schemaOf(url)],
    );
    expect(collation.rows[0]?.c).toBe('C');
    await expect(
      store.pool.query(`INSERT INTO tasks (task_id, auth_key, status, version, created_at_ms, last_updated_at_ms) VALUES ('x', 'a', 'paused', 1, 0, 0)`),
    ).rejects.toThrow(/check constraint/);
  });

  it('records the migration and a 32-byte shared secret', async () => {
    const applied = await store.pool.query<{ name: string }>('SELECT name FROM tasklatch_migrations ORDER BY name');
    expect(applied.rows.map((r) => r.name)).toEqual(['001_init.sql', '002_dispatch.sql', '003_active_tasks.sql', '004_migration_checksums.sql']);
    const secret = await store.sharedSecret();
    expect(secret.length).toBe(32);
    expect(await store.sharedSecret()).toEqual(secret);
  });

  it('is idempotent: a second run applies nothing and keeps the secret', async () => {
    const before = await store.sharedSecret();
    expect(await migratePostgres(url)).toEqual([]);
    expect(await migratePostgres(store.pool, schemaOf(url))).toEqual([]);
    const again = await PostgresStore.open(url);
    try {
      expect(await again.sharedSecret()).toEqual(before);
    } finally {
      await again.close();
    }
  });

  it('records each file\'s checksum, fills in those recorded before 004, and refuses a changed or unknown file', async () => {
    const files = await readPostgresMigrations();
    const ledger = async () => (await store.pool.query<{ name: string; checksum: string | null }>('SELECT name, checksum FROM tasklatch_migrations ORDER BY name')).rows;
    expect(await ledger()).toEqual(files.map((f) => ({ name: f.name, checksum: f.checksum })));
    // A ledger as 003 left it: no checksums. The next run fills them in from the known texts.
    await store.pool.query('UPDATE tasklatch_migrations SET checksum = NULL');
    expect(await migratePostgres(url)).toEqual([]);
    expect(await ledger()).toEqual(files.map((f) => ({ name: f.name, checksum: f.checksum })));
    await store.pool.query(`UPDATE tasklatch_migrations SET checksum = 'edited' WHERE name = '002_dispatch.sql'`);
    const changed: unknown = await migratePostgres(url).catch((e: unknown) => e);
    expect(isTasklatchError(changed, 'SCHEMA_MISMATCH')).toBe(true);
    expect((changed as Error).message).toContain('002_dispatch.sql');
    await store.pool.query(`UPDATE tasklatch_migrations SET checksum = $1 WHERE name = '002_dispatch.sql'`, [files[1]!.checksum]);
    await store.pool.query(`INSERT INTO tasklatch_migrations (name, applied_at_ms, checksum) VALUES ('999_future.sql', 0, 'x')`);
    const unknown: unknown = await migratePostgres(url).catch((e: unknown) => e);
    expect(isTasklatchError(unknown, 'SCHEMA_MISMATCH')).toBe(true);
    expect((unknown as Error).message).toContain('999_future.sql');
    await store.pool.query(`DELETE FROM tasklatch_migrations WHERE name = '999_future.sql'`);
    expect(await migratePostgres(url)).toEqual([]);
  });

  it('lets concurrent processes migrate one fresh schema: one applies, the rest find it done', async () => {
    const fresh = await freshPostgresUrl('pg_concurrent_migrate');
    const runs = await Promise.all(Array.from({ length: 6 }, () => migratePostgres(fresh)));
    expect(runs.filter((r) => r.length > 0)).toEqual([['001_init.sql', '002_dispatch.sql', '003_active_tasks.sql', '004_migration_checksums.sql']]);
    expect(runs.filter((r) => r.length === 0)).toHaveLength(5);
    const opened = await Promise.all([PostgresStore.open(fresh), PostgresStore.open(fresh)]);
    const secrets = await Promise.all(opened.map((s) => s.sharedSecret()));
    expect(secrets[0]).toEqual(secrets[1]);
    await Promise.all(opened.map((s) => s.close()));
  });
});

describe('PostgresStore connections', () => {
  it('keeps ?schema= stores apart', async () => {
    const [a, b] = await Promise.all([
      PostgresStore.open(await freshPostgresUrl('pg_iso_a')),
      PostgresStore.open(await freshPostgresUrl('pg_iso_b')),
    ]);
    try {
      const admitted = await a.admit(admission({ taskId: 'shared-id' }));
      expect(admitted.decision).toBe('ACCEPT_TASK');
      expect((await b.get({ authKey: 'tenant-a/alice', taskId: 'shared-id', now: NOW })).decision).toBe('NOT_FOUND');
      expect((await b.list({ authKey: 'tenant-a/alice', now: NOW, after: null, limit: 10 })).records).toEqual([]);
      expect((await b.admit(admission({ taskId: 'shared-id' }))).decision).toBe('ACCEPT_TASK');
      expect(await a.sharedSecret()).not.toEqual(await b.sharedSecret());
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('sets the search_path on every connection and keeps startup options given in the URL', async () => {
    const url = new URL(await freshPostgresUrl('pg_options'));
    url.searchParams.set('options', '-c statement_timeout=4321');
    const store = await PostgresStore.open(url.toString(), { poolSize: 3 });
    try {
      const shown = await Promise.all(
        [1, 2, 3].map(() => store.pool.query<{ path: string; timeout: string }>(
          `SELECT current_setting('search_path') AS path, current_setting('statement_timeout') AS timeout`,
        )),
      );
      expect(shown.map((r) => r.rows[0])).toEqual(Array(3).fill({ path: schemaOf(url.toString()), timeout: '4321ms' }));
    } finally {
      await store.close();
    }
  });

  it('reports an unreachable server as STORE_UNAVAILABLE naming host:port, never the password', async () => {
    const error: unknown = await PostgresStore.open('postgres://postgres:hunter2@127.0.0.1:1/test?schema=nowhere').catch((e: unknown) => e);
    expect(isTasklatchError(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toContain('127.0.0.1:1');
    expect((error as Error).message).not.toContain('hunter2');
  });

  it('refuses a schema name it cannot pass through search_path unchanged', async () => {
    const error: unknown = await PostgresStore.open('postgres://127.0.0.1:1/test?schema=Bad-Name').catch((e: unknown) => e);
    expect(isTasklatchError(error, 'INVALID_STORE_URL')).toBe(true);
    const reserved: unknown = await PostgresStore.open('postgres://127.0.0.1:1/test?schema=pg_mine').catch((e: unknown) => e);
    expect(isTasklatchError(reserved, 'INVALID_STORE_URL')).toBe(true);
    expect((reserved as Error).message).toMatch(/pg_ prefix is reserved/);
  });
});


function tally(decisions: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of decisions) counts[d] = (counts[d] ?? 0) + 1;
  return counts;
}

const TERMINALS = ['completed', 'failed', 'cancelled'] as const;
// A few result shapes, so that equal writes (IDEMPOTENT_TERMINAL) happen as well as conflicting ones.
const RESULTS = [undefined, { content: [{ type: 'text', text: 'a' }] }, { content: [{ type: 'text', text: 'b' }] }, { error: 'x' }];
const LOSING = new Set(['BLOCK_TERMINAL_REWRITE', 'IDEMPOTENT_TERMINAL', 'BLOCK_STALE_VERSION', 'ALREADY_TERMINAL']);

describe('PostgresStore under concurrency', () => {
  let store: PostgresStore;

  beforeAll(async () => {
    // More connections than one trial's writers would serialise them in the pool, not the database.
    store = await PostgresStore.open(await freshPostgresUrl('pg_race'), { poolSize: 32 });
  });
  afterAll(async () => store.close());

  it('64 concurrent admissions with one key and digest: one ACCEPT_TASK, 63 REPLAY_TASK, one row', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 64 }, (_, i) => store.admit(admission({ taskId: `same-${i}`, authKey: 'race/replay', idempotencyKey: 'k1' }))),
    );
    expect(tally(outcomes.map((o) => o.decision))).toEqual({ ACCEPT_TASK: 1, REPLAY_TASK: 63 });
    expect(new Set(outcomes.map((o) => o.record?.taskId)).size).toBe(1);
    const rows = await store.pool.query<{ n: string; outbox: string }>(
      `SELECT count(*) AS n, (SELECT count(*) FROM task_outbox o JOIN tasks t USING (task_id) WHERE t.auth_key = 'race/replay') AS outbox
         FROM tasks WHERE auth_key = 'race/replay'`,
    );
    expect(rows.rows[0]).toEqual({ n: '1', outbox: '1' });
  });

  it('64 concurrent admissions with one key and different digests: one ACCEPT_TASK, 63 collisions', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        store.admit(admission({ taskId: `diff-${i}`, authKey: 'race/collide', idempotencyKey: 'k1', requestDigest: `digest-${i}` })),
      ),
    );
    expect(tally(outcomes.map((o) => o.decision))).toEqual({ ACCEPT_TASK: 1, BLOCK_IDEMPOTENCY_COLLISION: 63 });
    const rows = await store.pool.query<{ n: string }>(`SELECT count(*) AS n FROM tasks WHERE auth_key = 'race/collide'`);
    expect(rows.rows[0]?.n).toBe('1');
  });

  // 1,000 trials take ~50 s on 2 cores by themselves (every writer is a committed transaction);
  // the default keeps `npm test` short, TASKLATCH_RACE_TRIALS=1000 runs the full figure.
  const trials = Number(process.env.TASKLATCH_RACE_TRIALS ?? 200);

  it('concurrent terminal writers (and cancels): exactly one applied write per task', { timeout: 60_000 + trials * 200 }, async () => {
    const seed = Number(process.env.TASKLATCH_RACE_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const next = prng(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const all: string[] = [];
    let writers = 0;
    const started = Date.now();
    for (let trial = 0; trial < trials; trial++) {
      const taskId = `race-${trial}`;
      await store.admit(admission({ taskId, authKey: 'race/writers' }));
      const count = 16 + Math.floor(next() * 49);
      const stale = (): boolean => next() < 0.2;
      const ops: (() => Promise<{ decision: string }>)[] = Array.from({ length: count }, (_, i) => {
        // The first writer always holds the current version, so someone can win every trial.
        const write = { status: pick(TERMINALS), result: pick(RESULTS), expectedVersion: i > 0 && stale() ? 0 : 1 };
        return () => store.transition({ taskId, authKey: 'race/writers', write, correlationId: `w${i}`, now: NOW });
      });
      if (next() < 0.3) ops.push(() => store.cancel({ authKey: 'race/writers', taskId, now: NOW, correlationId: 'cancel' }));
      // Shuffled, then all started at once: the start order decides who asks the pool first.
      for (let i = ops.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [ops[i], ops[j]] = [ops[j]!, ops[i]!];
      }
      const decisions = (await Promise.all(ops.map((op) => op()))).map((o) => o.decision);
      writers += decisions.length;
      all.push(...decisions);
      const winners = decisions.filter((d) => d === 'APPLY_TRANSITION' || d === 'CANCEL_TASK');
      expect(winners, `trial ${trial} (seed ${seed})`).toHaveLength(1);
      expect(decisions.filter((d) => d !== winners[0] && !LOSING.has(d)), `trial ${trial} (seed ${seed})`).toEqual([]);
    }
    const elapsed = Date.now() - started;

    // The stored facts agree: one terminal status at version 2 per task, one applied write in its trail.
    const rows = await store.pool.query<{ status: string; version: number; n: string }>(
      `SELECT status, version, count(*) AS n FROM tasks WHERE auth_key = 'race/writers' GROUP BY status, version`,
    );
    expect(rows.rows.every((r) => TERMINALS.includes(r.status as (typeof TERMINALS)[number]) && r.version === 2)).toBe(true);
    expect(rows.rows.reduce((sum, r) => sum + Number(r.n), 0)).toBe(trials);
    const applied = await store.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM (
         SELECT task_id FROM task_audit WHERE auth_key = 'race/writers' AND task_id LIKE 'race-%'
          GROUP BY task_id HAVING count(*) FILTER (WHERE decision IN ('APPLY_TRANSITION', 'CANCEL_TASK')) = 1) AS ok`,
    );
    expect(Number(applied.rows[0]?.n)).toBe(trials);
    console.log(
      `[postgres race] seed ${seed}: ${trials} trials, ${writers} writers, ${elapsed} ms, outcomes ${JSON.stringify(tally(all))}`,
    );
  });
});
