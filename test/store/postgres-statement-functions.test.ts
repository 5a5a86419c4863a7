import { afterEach, describe, expect, it } from 'vitest';
import { isConnectionFailure } from '../../src/store/postgres/connection.js';
import { prepared, sqlLiteral } from '../../src/store/postgres/prepared.js';
import { StatementFunctions } from '../../src/store/postgres/statement-functions.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';

// The functions a transaction-pooled store calls its statements through (statement-functions.ts),
// made here on a direct pool of a fresh schema: what gets one, what does not, and what a call returns.

const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function setUp(label: string): Promise<{ store: PostgresStore; functions: StatementFunctions }> {
  const store = await PostgresStore.open(await freshPostgresUrl(label));
  opened.push(store);
  return { store, functions: new StatementFunctions(store.pool, isConnectionFailure) };
}

const literals = (values: unknown[]) => values.map((v) => sqlLiteral(v) as string);

describe('statement functions', () => {
  it('a statement gets a function of its parameters and columns, and its call returns what the statement returns', async () => {
    const { store, functions } = await setUp('fn_shape');
    // A write with a data-modifying CTE, as the store's are; every kind of value the store's rows carry.
    const text = `WITH w AS (
      INSERT INTO tasklatch_meta (key, value) VALUES ($1, $2) RETURNING key, value
    ) SELECT w.key, w.value, $3::bigint AS big, $4::int AS small, $5::jsonb AS doc, $6::boolean AS flag, $7::text[] AS list, NULL::text AS none FROM w`;
    const statement = prepared(text);
    const args = (key: string) => [key, 'v', 1_750_000_000_123, 7, '{"a":[1,"x"]}', true, ['a', 'b"c']];
    expect(functions.callOf(statement, literals(args('k0')))).toBeNull();
    await functions.settled();
    const call = functions.callOf(statement, literals(args('k1')));
    expect(call).toMatch(/^SELECT \* FROM tl_[0-9a-f]{16}\(/);
    const viaFunction = await store.pool.query(call!);
    const viaText = await store.pool.query(text, args('k2'));
    expect(viaFunction.rows).toEqual([{ ...viaText.rows[0], key: 'k1' }]);
    expect(viaFunction.fields.map((f) => [f.name, f.dataTypeID])).toEqual(viaText.fields.map((f) => [f.name, f.dataTypeID]));
    // The write happened once per call.
    const keys = await store.pool.query<{ key: string }>(`SELECT key FROM tasklatch_meta WHERE key LIKE 'k_' ORDER BY key`);
    expect(keys.rows.map((r) => r.key)).toEqual(['k1', 'k2']);
  });

  it('a statement of no rows, of two columns of one name, or that does not parse keeps its text, and the pool stays usable', async () => {
    const { store, functions } = await setUp('fn_refused');
    const statements = [
      prepared(`UPDATE tasklatch_meta SET value = $2 WHERE key = $1`),
      prepared(`SELECT $1::text AS a, $1::text AS a`),
      prepared(`SELEC $1::text`),
      prepared(`SELECT * FROM no_such_table WHERE a = $1`),
    ];
    for (const statement of statements) expect(functions.callOf(statement, ["'x'", "'y'"])).toBeNull();
    await functions.settled();
    for (const statement of statements) expect(functions.callOf(statement, ["'x'", "'y'"])).toBeNull();
    expect((await store.pool.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    const made = await store.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_proc WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'tl\\_%'`,
    );
    expect(made.rows[0]?.n).toBe(0);
  });

  it('two processes asking for the same function at once: one creates it, both call it', async () => {
    const { store, functions } = await setUp('fn_race');
    const other = new StatementFunctions(store.pool, isConnectionFailure);
    const statement = prepared(`SELECT $1::int + 1 AS next`);
    expect(functions.callOf(statement, ['1'])).toBeNull();
    expect(other.callOf(statement, ['1'])).toBeNull();
    await Promise.all([functions.settled(), other.settled()]);
    const calls = [functions.callOf(statement, ['41']), other.callOf(statement, ['41'])];
    expect(calls[0]).not.toBeNull();
    expect(calls[1]).toBe(calls[0]);
    expect((await store.pool.query<{ next: number }>(calls[0]!)).rows).toEqual([{ next: 42 }]);
  });

  it('a function whose statement a migration gave another column is made again, under another name', async () => {
    const { store, functions } = await setUp('fn_migrated');
    await store.pool.query('CREATE TABLE scratch (id int PRIMARY KEY, v int NOT NULL)');
    await store.pool.query('INSERT INTO scratch VALUES (1, 0)');
    const statement = prepared('WITH a AS (UPDATE scratch SET v = v + 1 WHERE id = $1 RETURNING *) SELECT a.* FROM a');
    expect(functions.callOf(statement, ['1'])).toBeNull();
    await functions.settled();
    const before = functions.callOf(statement, ['1'])!;
    expect((await store.pool.query(before)).rows).toEqual([{ id: 1, v: 1 }]);
    await store.pool.query('ALTER TABLE scratch ADD COLUMN w text');
    const failed: unknown = await store.pool.query(before).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failed).toMatchObject({ code: '42804' });
    expect(() => functions.forgetFailed(failed)).toThrow(failed);
    // Its text again at once; its new function once made.
    expect(functions.callOf(statement, ['1'])).toBeNull();
    await functions.settled();
    const after = functions.callOf(statement, ['1'])!;
    expect(after.slice(0, 30)).not.toBe(before.slice(0, 30));
    expect((await store.pool.query(after)).rows).toEqual([{ id: 1, v: 2, w: null }]);
    // Any other error leaves the functions as they are.
    expect(() => functions.forgetFailed(new Error('other'))).toThrow('other');
    expect(functions.callOf(statement, ['1'])).toBe(after);
  });
});
