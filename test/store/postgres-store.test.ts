import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import type { TaskRecord } from '../../src/core/types.js';
import type { AdmitInput, ClaimInput, Fence, TaskStore } from '../../src/store/types.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { migratePostgres } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshPostgresUrl } from '../support/postgres.js';

// PostgreSQL-only behaviour: the schema a fresh database gets, migrations under concurrency,
// ?schema= isolation, connection failures, and the races the unique index and the conditional
// UPDATE exist for. The behaviour shared with the other stores is in store-suite.test.ts.

const NOW = 1_750_000_000_000;

function schemaOf(url: string): string {
  return new URL(url).searchParams.get('schema') ?? '';
}

function admission(overrides: Partial<AdmitInput> = {}): AdmitInput {
  return {
    taskId: `t-${Math.random().toString(36).slice(2)}`,
    authKey: 'tenant-a/alice',
    toolName: 'slow',
    request: { method: 'tools/call', params: { name: 'slow', arguments: { n: 1 } } },
    requestDigest: 'digest-1',
    idempotencyKey: null,
    ttl: null,
    pollInterval: 1000,
    correlationId: 'corr',
    now: NOW,
    ...overrides,
  };
}

/** Every table, column, type and nullability tasklatch's migrations create. */
const EXPECTED_COLUMNS = `
task_audit: id bigint NO, at_ms bigint YES, surface text YES, decision text YES, auth_key text YES, task_id text YES,
  correlation_id text YES, status text YES, version integer YES, detail text YES
task_outbox: id bigint NO, task_id text NO, created_at_ms bigint NO, available_at_ms bigint NO, claimed_by text YES,
  lease_expires_at_ms bigint YES, attempt integer NO, done_at_ms bigint YES
tasklatch_meta: key text NO, value text NO
tasklatch_migrations: name text NO, applied_at_ms bigint NO
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
    expect(applied.rows.map((r) => r.name)).toEqual(['001_init.sql', '002_dispatch.sql', '003_active_tasks.sql']);
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

  it('lets concurrent processes migrate one fresh schema: one applies, the rest find it done', async () => {
    const fresh = await freshPostgresUrl('pg_concurrent_migrate');
    const runs = await Promise.all(Array.from({ length: 6 }, () => migratePostgres(fresh)));
    expect(runs.filter((r) => r.length > 0)).toEqual([['001_init.sql', '002_dispatch.sql', '003_active_tasks.sql']]);
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
      expect((await b.get('tenant-a/alice', 'shared-id', NOW)).decision).toBe('NOT_FOUND');
      expect((await b.list('tenant-a/alice', NOW, { after: null, limit: 10 })).records).toEqual([]);
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

/** Small deterministic PRNG (mulberry32), so a failing race can be rerun with its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
    const next = random(seed);
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
      if (next() < 0.3) ops.push(() => store.cancel('race/writers', taskId, NOW, 'cancel'));
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

const claimBy = (owner: string, now: number, leaseMs: number, limit = 5): ClaimInput => ({
  owner, now, leaseMs, limit, maxAttempts: 5, abandonedResult: { error: 'abandoned' }, correlationId: `claim-${owner}`,
});
const fenceOf = (r: TaskRecord): Fence => ({ taskId: r.taskId, authKey: r.authKey, owner: r.leaseOwner ?? '', version: r.version });

describe('PostgresStore dispatch under concurrency', () => {
  // Three stores on one schema: three pools, so claimers meet in the database, not in one pool.
  const stores: PostgresStore[] = [];
  /** Three stores for the claimers; a fourth, when asked for, for a worker of its own. */
  async function openStores(label: string, count = 3): Promise<PostgresStore[]> {
    const url = await freshPostgresUrl(label);
    // One after the other: the first migrates, the others find the schema current.
    const opened: PostgresStore[] = [];
    for (let i = 0; i < count; i++) opened.push(await PostgresStore.open(url, { poolSize: 8 }));
    stores.push(...opened);
    return opened;
  }
  const CLAIMER_POOLS = 3;
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  it('8 claimers on 3 pools, claiming 5 at a time: each of 300 tasks is claimed exactly once', async () => {
    const [a, b] = await openStores('pg_dispatch_many');
    const tasks = 300;
    const claimers = 8;
    for (let i = 0; i < tasks; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => a!.admit(admission({ taskId: `m-${i + j}`, authKey: 'dispatch/many', now: NOW + ((i + j) % 7) }))));
    }
    const started = Date.now();
    const perClaimer = await Promise.all(
      Array.from({ length: claimers }, async (_, c) => {
        const got: TaskRecord[] = [];
        for (;;) {
          const batch = await stores[c % CLAIMER_POOLS]!.claim(claimBy(`c${c}`, NOW + 100, 60_000));
          if (batch.length === 0) return got;
          got.push(...batch);
        }
      }),
    );
    const elapsed = Date.now() - started;
    const ids = perClaimer.flat().map((r) => r.taskId);
    expect(ids).toHaveLength(tasks);
    expect(new Set(ids).size).toBe(tasks);
    expect(await b!.claim(claimBy('late', NOW + 100, 60_000, 50))).toEqual([]);

    // The stored facts agree: one claim each, leased to the claimer that got it, entry still open.
    const owners = new Map(perClaimer.flatMap((got, c) => got.map((r) => [r.taskId, `c${c}`] as const)));
    const rows = await a!.pool.query<{ task_id: string; version: number; attempt: number; lease_owner: string; claimed_by: string }>(
      `SELECT t.task_id, t.version, t.attempt, t.lease_owner, o.claimed_by FROM tasks t JOIN task_outbox o USING (task_id)`,
    );
    expect(rows.rows).toHaveLength(tasks);
    for (const r of rows.rows) expect(r).toEqual({ task_id: r.task_id, version: 2, attempt: 1, lease_owner: owners.get(r.task_id), claimed_by: owners.get(r.task_id) });
    const audited = await a!.pool.query<{ n: string }>(`SELECT count(DISTINCT task_id) AS n FROM task_audit WHERE detail LIKE 'claim %'`);
    expect(Number(audited.rows[0]?.n)).toBe(tasks);
    expect(await a!.pendingDispatch(NOW + 100)).toBe(tasks);
    console.log(
      `[postgres dispatch] ${tasks} tasks, ${claimers} claimers on ${CLAIMER_POOLS} pools, claims per claimer ${JSON.stringify(perClaimer.map((g) => g.length))}, ${elapsed} ms`,
    );
  });

  it('walks the outbox exactly as the memory store does: pages, skips, deferrals, closings, abandons', async () => {
    const [pgStore] = await openStores('pg_dispatch_walk', 1);
    const both = [pgStore!, new MemoryStore()] as const;
    const ids = Array.from({ length: 14 }, (_, i) => `w-${String(i).padStart(2, '0')}`);
    // The same script on both stores; every answer is compared.
    const run = async (store: TaskStore): Promise<unknown[]> => {
      const seen: unknown[] = [];
      const claim = async (owner: string, now: number, limit: number, maxAttempts = 5) => {
        const got = await store.claim({ ...claimBy(owner, now, 1000, limit), maxAttempts });
        seen.push(got, await store.pendingDispatch(now));
        return got;
      };
      for (const [i, taskId] of ids.entries()) await store.admit(admission({ taskId, authKey: 'walk', now: NOW + (i % 4), ttl: i === 3 ? 50 : null }));
      const write = (taskId: string, status: string, now: number) =>
        store.transition({ taskId, authKey: 'walk', write: { status, expectedVersion: 1 }, correlationId: 'x', now });
      seen.push(await write(ids[0]!, 'input_required', NOW + 10), await write(ids[5]!, 'completed', NOW + 10));
      seen.push(await store.cancel('walk', ids[6]!, NOW + 10, 'x'));
      const first = await claim('w0', NOW + 20, 2);
      await claim('w1', NOW + 100, 3);
      seen.push(await store.heartbeat(fenceOf(first[0]!), NOW + 900, 1000), await store.release(fenceOf(first[1]!), NOW + 900));
      await claim('w2', NOW + 1200, 4, 1);
      await claim('w3', NOW + 1200, 3);
      await claim('w4', NOW + 2500, 20, 2);
      for (const taskId of ids) seen.push(await store.get('walk', taskId, NOW + 2500), await store.auditTrail(taskId));
      return seen;
    };
    const [fromPostgres, fromMemory] = [await run(both[0]), await run(both[1])];
    expect(fromPostgres).toEqual(fromMemory);
  });

  // Also the deadlock guard: with only the outbox entry locked by the claim walk, w1's terminal
  // writes (task row, then the entry to close it) deadlock against claimers on every run.
  it("lease takeover: w1's late heartbeats and terminal writes race 8 claimers; one applied terminal write per task", async () => {
    const [a, , , w1Store] = await openStores('pg_dispatch_takeover', 4);
    const tasks = 100;
    const claimers = 8;
    const leaseMs = 1000;
    await Promise.all(Array.from({ length: tasks }, (_, i) => a!.admit(admission({ taskId: `k-${i}`, authKey: 'dispatch/takeover' }))));
    const held: TaskRecord[] = [];
    for (let batch = await a!.claim(claimBy('w1', NOW, leaseMs, 30)); batch.length > 0; batch = await a!.claim(claimBy('w1', NOW, leaseMs, 30))) {
      held.push(...batch);
    }
    expect(held).toHaveLength(tasks);

    // Every w1 lease has run out at `late`; w1 has not noticed and carries on with all its tasks
    // at once, from a pool of its own, while the claimers start.
    const late = NOW + leaseMs + 500;
    let w1Done = false;
    const started = Date.now();
    const w1 = (async () => {
      const outcomes = await Promise.all(
        held.map(async (task) => {
          const beat = await w1Store!.heartbeat(fenceOf(task), late, leaseMs);
          const write = { status: 'completed', expectedVersion: task.version, result: { by: 'w1' } };
          const written = await w1Store!.transition({ taskId: task.taskId, authKey: task.authKey, write, correlationId: 'w1', now: late });
          return { taskId: task.taskId, beat, decision: written.decision };
        }),
      );
      w1Done = true;
      return outcomes;
    })();
    const runs = Array.from({ length: claimers }, async (_, n) => {
      const store = stores[n % CLAIMER_POOLS]!;
      const got: TaskRecord[] = [];
      for (;;) {
        // Read before claiming: an empty claim that began after w1 finished means nothing is left.
        const finished = w1Done;
        const batch = await store.claim(claimBy(`c${n}`, late, leaseMs));
        for (const r of batch) expect(await store.heartbeat(fenceOf(r), late, leaseMs)).toBe(true);
        got.push(...batch);
        if (batch.length > 0) continue;
        if (finished) return got;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    });
    const [w1Outcomes, ...perClaimer] = await Promise.all([w1, ...runs]);
    const elapsed = Date.now() - started;

    // The new holders finish what they took over; their fence still holds.
    const takenOver = perClaimer.flat();
    for (const r of takenOver) {
      const done = await a!.transition({ taskId: r.taskId, authKey: r.authKey, write: { status: 'completed', expectedVersion: r.version, result: { by: r.leaseOwner } }, correlationId: r.leaseOwner!, now: late + 1 });
      expect(done.decision).toBe('APPLY_TRANSITION');
    }
    const takenIds = new Set(takenOver.map((r) => r.taskId));
    expect(takenIds.size).toBe(takenOver.length);
    for (const o of w1Outcomes) {
      // w1 wins exactly the tasks nobody took over, and a heartbeat that held kept them its own.
      expect(o.decision).toBe(takenIds.has(o.taskId) ? 'BLOCK_STALE_VERSION' : 'APPLY_TRANSITION');
      if (o.beat) expect(o.decision).toBe('APPLY_TRANSITION');
    }
    const applied = await a!.pool.query<{ task_id: string; n: string }>(
      `SELECT t.task_id, count(a.id) FILTER (WHERE a.decision = 'APPLY_TRANSITION' AND a.status IN ('completed', 'failed', 'cancelled')) AS n
         FROM tasks t LEFT JOIN task_audit a USING (task_id) GROUP BY t.task_id`,
    );
    expect(applied.rows).toHaveLength(tasks);
    expect(applied.rows.every((r) => r.n === '1')).toBe(true);
    const facts = await a!.pool.query<{ status: string; version: number; attempt: number; n: string }>(
      `SELECT status, version, attempt, count(*) AS n FROM tasks GROUP BY 1, 2, 3 ORDER BY 2`,
    );
    const w1Won = tasks - takenOver.length;
    expect(facts.rows).toEqual(
      [
        ...(w1Won > 0 ? [{ status: 'completed', version: 3, attempt: 1, n: String(w1Won) }] : []),
        ...(takenOver.length > 0 ? [{ status: 'completed', version: 4, attempt: 2, n: String(takenOver.length) }] : []),
      ],
    );
    expect(await a!.pendingDispatch(late + 1)).toBe(0);
    console.log(
      `[postgres takeover] ${tasks} tasks, ${claimers} claimers on ${CLAIMER_POOLS} pools, taken over ${takenOver.length} (w1 kept ${w1Won}, ` +
        `its heartbeats held ${w1Outcomes.filter((o) => o.beat).length}), claims per claimer ${JSON.stringify(perClaimer.map((g) => g.length))}, ${elapsed} ms`,
    );
  });
});
