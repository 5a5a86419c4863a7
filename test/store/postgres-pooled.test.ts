import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { parsePostgresUrl } from '../../src/store/postgres/connection.js';
import { executeCall, prepared } from '../../src/store/postgres/prepared.js';
import { probePostgres } from '../../src/store/postgres/probe.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPooledUrl, freshPostgresUrl, poolerSkipReason } from '../support/postgres.js';
import { pgAdmission as admission, PG_NOW as NOW } from '../support/records.js';
import { oneTask, tasksAtOnce } from '../support/store-tasks.js';
import { until } from '../support/until.js';

// A PostgreSQL store behind PgBouncer in transaction mode (`pgbouncer=true`): what it sends
// (no statement prepared by name, no session setting, no LISTEN), and the URLs it takes. The
// store suite runs through the pooler too (test/support/stores.ts).

const skip = poolerSkipReason();
const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

/**
 * Every query config pg clients send while `work` runs: `work` opens its store, so every
 * connection of it is made (and binds `query`) while the prototype records.
 */
async function sent(work: (seen: ReadonlyArray<{ text: string; name?: string }>) => Promise<void>): Promise<Array<{ text: string; name?: string }>> {
  const seen: Array<{ text: string; name?: string }> = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text: string; name?: string };
    seen.push(typeof first === 'string' ? { text: first } : { text: first.text, ...(first.name === undefined ? {} : { name: first.name }) });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as never;
  try {
    await work(seen);
  } finally {
    pg.Client.prototype.query = original;
  }
  return seen;
}

/** A lifecycle on `store`: admit (with a key), claim, complete, get, list, audit trail, notifications. */
async function lifecycle(store: PostgresStore): Promise<void> {
  const input = admission({ idempotencyKey: 'k1' });
  const admitted = await store.admit(input);
  expect(admitted.decision).toBe('ACCEPT_TASK');
  const [claimed] = await store.claim({ owner: 'w1', now: NOW, leaseMs: 30_000, limit: 1, maxAttempts: 3, abandonedResult: null, correlationId: 'c1' });
  expect(claimed?.taskId).toBe(input.taskId);
  const done = await store.transition({
    taskId: input.taskId,
    authKey: input.authKey,
    write: { status: 'completed', expectedVersion: claimed!.version, result: { content: [], isError: false } },
    correlationId: 'c2',
    now: NOW + 1,
  });
  expect(done.decision).toBe('APPLY_TRANSITION');
  expect((await store.get({ taskId: input.taskId, authKey: input.authKey, now: NOW + 2, correlationId: 'c3' } as never)).record?.status).toBe('completed');
  await store.auditTrail({ taskId: input.taskId });
}

/** Statements that need a session: a named or PREPAREd statement, EXECUTE (not a trigger's EXECUTE FUNCTION), LISTEN, a SET that is not LOCAL. */
function sessionBound(queries: Array<{ text: string; name?: string }>): string[] {
  return queries
    .filter(
      (q) =>
        q.name !== undefined ||
        /\b(PREPARE|EXECUTE(?!\s+(?:FUNCTION|PROCEDURE)\b)|LISTEN)\s/.test(q.text) ||
        /(^|;\s*)SET\s+(?!LOCAL\b|TRANSACTION\b)/i.test(q.text),
    )
    .map((q) => q.name ?? q.text.slice(0, 80));
}

/** The statement functions `queries` called. */
function calls(queries: ReadonlyArray<{ text: string }>): string[] {
  return queries.flatMap((q) => (typeof q.text === 'string' ? [...q.text.matchAll(/SELECT \* FROM (tl_[0-9a-f]{16})\(/g)].map((m) => m[1] as string) : []));
}

/**
 * Runs one task after another on `store` until the admission, the claim's two statements, the
 * status write and the read go through functions (each statement's first use sends its text and
 * starts the creation of its function); the functions the last task called.
 */
async function untilCalledThroughFunctions(store: PostgresStore, seen: ReadonlyArray<{ text: string }>): Promise<Set<string>> {
  return until(async () => {
    const from = seen.length;
    await oneTask(store);
    const called = new Set(calls(seen.slice(from)));
    return called.size >= 5 ? called : undefined;
  });
}

describe.skipIf(skip !== null)(`a PostgreSQL store behind PgBouncer in transaction mode${skip === null ? '' : ` (skipped: ${skip})`}`, () => {
  it('sends nothing that outlives a transaction, where a direct store prepares statements by name', async () => {
    const urls = (await freshPooledUrl('pooled_sent'))!;
    const directUrl = await freshPostgresUrl('pooled_sent_direct');
    const run = (url: string) => async () => {
      const store = await PostgresStore.open(url);
      opened.push(store);
      await lifecycle(store);
    };
    const viaPooler = await sent(run(urls.pooled));
    expect(viaPooler.length).toBeGreaterThan(3);
    expect(sessionBound(viaPooler)).toEqual([]);
    // The same lifecycle on a direct connection does use them: the check above can fail.
    expect(sessionBound(await sent(run(directUrl))).length).toBeGreaterThan(0);
    // The pooler runs DISCARD ALL after every transaction: a statement prepared in one would be
    // gone in the next, so the lifecycle above completing through it is the server's side of this.
  });

  it('sends each write through a function of the schema once it has one, with the answers the statement’s text gave', async () => {
    const urls = (await freshPooledUrl('pooled_functions'))!;
    let first: Awaited<ReturnType<typeof oneTask>> | undefined;
    let later: Awaited<ReturnType<typeof oneTask>> | undefined;
    const queries = await sent(async (seen) => {
      const store = await PostgresStore.open(urls.pooled);
      opened.push(store);
      first = await oneTask(store);
      await untilCalledThroughFunctions(store, seen);
      later = await oneTask(store);
      expect(new Set(calls(seen)).size).toBeGreaterThanOrEqual(5);
    });
    expect(calls(queries).length).toBeGreaterThan(0);
    expect(sessionBound(queries)).toEqual([]);
    // The rows a function returns reach pg as the statement's own would: every field of the same type.
    for (const key of ['claimed', 'done', 'read'] as const) {
      const types = (r: object) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? 'null' : typeof v]));
      expect(types(later![key])).toEqual(types(first![key]));
    }
    expect(later!.done).toEqual(later!.read);
    // In the store's schema, where DROP SCHEMA … CASCADE takes them.
    const direct = new pg.Client({ connectionString: urls.direct });
    await direct.connect();
    try {
      const schema = new URL(urls.direct).searchParams.get('schema');
      const made = await direct.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'tl\\_%'`, [
        schema,
      ]);
      expect(made.rows[0]?.n).toBeGreaterThanOrEqual(4);
    } finally {
      await direct.end();
    }
  });

  it('a function a migration left behind fails one call, then its statement goes as text until its new function is made', async () => {
    const urls = (await freshPooledUrl('pooled_fn_migrated'))!;
    const store = await PostgresStore.open(urls.pooled);
    opened.push(store);
    await store.pool.query('CREATE TABLE scratch (id int PRIMARY KEY, v int NOT NULL)');
    await store.pool.query('INSERT INTO scratch VALUES (1, 0)');
    const statement = prepared('WITH a AS (UPDATE scratch SET v = v + 1 WHERE id = $1 RETURNING *) SELECT a.* FROM a');
    const functionCall = async () => {
      const call = executeCall(statement, [1], store.pool)!;
      return call.startsWith('SELECT * FROM tl_') ? call : (await store.pool.query(call), undefined);
    };
    const before = await until(functionCall);
    expect((await store.pool.query(before)).rows).toEqual([{ id: 1, v: expect.any(Number) as number }]);
    await store.pool.query('ALTER TABLE scratch ADD COLUMN w text');
    await expect(store.pool.query(before)).rejects.toMatchObject({ code: '42804' });
    expect(executeCall(statement, [1], store.pool)!.startsWith('WITH a AS')).toBe(true);
    const after = await until(functionCall);
    expect(after).not.toBe(before);
    expect((await store.pool.query(after)).rows).toEqual([{ id: 1, v: expect.any(Number) as number, w: null }]);
  });

  it('a migration that adds a column to tasks while the store runs: its writes, claims and reads go on through the same functions', async () => {
    const urls = (await freshPooledUrl('pooled_fn_tasks_migrated'))!;
    const queries = await sent(async (seen) => {
      const store = await PostgresStore.open(urls.pooled);
      opened.push(store);
      const before = await untilCalledThroughFunctions(store, seen);
      // What a newer version's migration does while this one runs. The statements of a task's
      // life answer with its row as one JSON value, whose type no column changes: every function
      // still matches (a function whose statement returns the columns themselves is made again:
      // postgres-statement-functions.test.ts).
      await store.pool.query('ALTER TABLE tasks ADD COLUMN added_by_a_migration text');
      const from = seen.length;
      await tasksAtOnce(store, 4);
      const { done, read } = await oneTask(store);
      expect(read).toEqual(done);
      const called = calls(seen.slice(from));
      expect(called.length).toBeGreaterThanOrEqual(5);
      expect(called.filter((name) => !before.has(name))).toEqual([]);
    });
    expect(sessionBound(queries)).toEqual([]);
  });

  it('resolves names in the store’s schema in every transaction, whatever carries the values', async () => {
    const urls = (await freshPooledUrl('pooled_schema'))!;
    const store = await PostgresStore.open(urls.pooled);
    opened.push(store);
    const schema = new URL(urls.pooled).searchParams.get('schema');
    // Values with a literal travel in the message that sets the schema; 1.5 has none, and goes
    // in a transaction of its own; a checked-out client's transaction sets it once.
    const literal = await store.pool.query<{ s: string; n: string }>('SELECT current_schema() AS s, count(*)::text AS n FROM tasks WHERE task_id = $1', ['x']);
    expect(literal.rows[0]).toEqual({ s: schema, n: '0' });
    const parameter = await store.pool.query<{ s: string; x: number }>('SELECT current_schema() AS s, $1::float8 AS x FROM tasklatch_meta LIMIT 1', [1.5]);
    expect(parameter.rows[0]).toEqual({ s: schema, x: 1.5 });
    const client = await store.pool.connect();
    try {
      await client.query('BEGIN');
      expect((await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]?.s).toBe(schema);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  });

  it('processes opening one fresh schema at once through the pooler: one migrates, the others find it current', async () => {
    // Each open migrates under the schema's advisory lock; one that had looked the schema up
    // before the lock would still see it absent after the other's commit and collide on CREATE
    // SCHEMA (seen as a duplicate key in pg_namespace).
    for (let round = 0; round < 3; round++) {
      const urls = (await freshPooledUrl(`pooled_race_${round}`))!;
      const stores = await Promise.all(Array.from({ length: 6 }, () => PostgresStore.open(urls.pooled)));
      opened.push(...stores);
      expect(stores.map((s) => s.migrationsApplied.length > 0).filter(Boolean)).toHaveLength(1);
    }
  });

  it('doctor’s probe reads the schema through the pooler and skips LISTEN there', async () => {
    const urls = (await freshPooledUrl('pooled_probe'))!;
    opened.push(await PostgresStore.open(urls.pooled));
    const probe = await probePostgres(urls.pooled);
    expect(probe).toMatchObject({ unreachable: null, notifications: null });
    expect(probe.schema?.pending).toEqual([]);
    expect(probe.schema?.mismatch).toBeNull();
  });

  it('has no notifications without a listen URL, and hears another handle’s change with one', async () => {
    const urls = (await freshPooledUrl('pooled_listen'))!;
    const polling = await PostgresStore.open(urls.pooled);
    opened.push(polling);
    expect(polling.supports.listenNotify).toBe(false);
    const listening = await PostgresStore.open(urls.pooled, { listenUrl: urls.direct });
    opened.push(listening);
    expect(listening.supports.listenNotify).toBe(true);
    const heard: string[] = [];
    const stop = await listening.listen((taskId) => void (taskId !== null && heard.push(taskId)));
    try {
      const input = admission();
      await polling.admit(input);
      await until(() => (heard.includes(input.taskId) ? true : undefined));
    } finally {
      await stop();
    }
  });
});

describe('pgbouncer= in a store URL', () => {
  it('is taken out before the URL reaches pg, and refuses what a pooled session cannot keep', () => {
    const target = parsePostgresUrl('postgres://u@h:6432/db?schema=tl_x&pgbouncer=true');
    expect(target).toMatchObject({ pgbouncer: true, schema: 'tl_x' });
    expect(target.connectionString).toBe('postgres://u@h:6432/db');
    expect(parsePostgresUrl('postgres://u@h/db?pgbouncer=false').pgbouncer).toBe(false);
    expect(parsePostgresUrl('postgres://u@h/db').pgbouncer).toBe(false);
    for (const url of ['postgres://u@h/db?pgbouncer=yes', 'postgres://u@h/db?pgbouncer=true&options=-c%20work_mem%3D4MB']) {
      let thrown: unknown;
      try {
        parsePostgresUrl(url);
      } catch (error) {
        thrown = error;
      }
      expect(isTasklatchError(thrown, 'INVALID_STORE_URL')).toBe(true);
    }
  });

  it('a listen URL must be direct and name the store’s schema', async () => {
    for (const listenUrl of ['postgres://postgres@127.0.0.1:5432/test?pgbouncer=true', 'postgres://postgres@127.0.0.1:5432/test?schema=tl_other']) {
      await expect(PostgresStore.open('postgres://postgres@127.0.0.1:1/test?schema=tl_mine&pgbouncer=true', { listenUrl })).rejects.toMatchObject({
        code: 'INVALID_STORE_URL',
      });
    }
  });
});
