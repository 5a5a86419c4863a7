import { afterEach, describe, expect, it } from 'vitest';
import { callWith, isStalePlan, prepared, type Call } from '../../src/store/postgres/prepared.js';
import { WriteBatcher } from '../../src/store/postgres/write-batcher.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { oneTask, tasksAtOnce } from '../support/store-tasks.js';

// A PostgreSQL store connected directly while a newer version migrates its schema. A column added
// to a table changes what a prepared statement returning its columns returns (`RETURNING *`,
// `SELECT *`), and PostgreSQL refuses to run it as prepared ("cached plan must not change result
// type"); the statements of a task's life answer with the task as one JSON value, which no column
// changes. The same behind a pooler, where the statements are functions: postgres-pooled.test.ts.

const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

describe('a PostgreSQL store whose schema a newer version migrates while it runs', () => {
  it('admits, claims and completes tasks across a column added to tasks', async () => {
    // Two connections, each used many times: each has prepared the statements before the migration.
    const store = await PostgresStore.open(await freshPostgresUrl('stale_plans'), { poolSize: 2 });
    opened.push(store);
    for (let i = 0; i < 3; i++) await oneTask(store);
    await tasksAtOnce(store, 4);
    await store.pool.query('ALTER TABLE tasks ADD COLUMN added_by_a_migration text');
    // The claim, the status write and the read answer with the task as one JSON value, which no
    // added column changes; a statement prepared before that returns the columns themselves would
    // now fail on every connection that prepared it, and is prepared again (the next test's kind).
    await tasksAtOnce(store, 4);
    const { done, read } = await oneTask(store);
    expect(read).toEqual(done);
    await tasksAtOnce(store, 4);
  });

  it('a write batch whose prepared statement returns the columns of a table a migration changed is sent again, prepared anew', async () => {
    // Two connections, each of which prepares the statement before the migration.
    const store = await PostgresStore.open(await freshPostgresUrl('stale_plans_batch'), { poolSize: 2 });
    opened.push(store);
    await store.pool.query('CREATE TABLE scratch (id int PRIMARY KEY, v int NOT NULL)');
    await store.pool.query('INSERT INTO scratch VALUES (1, 0), (2, 0)');
    const batcher = new WriteBatcher(store.pool);
    const bump = prepared('WITH a AS (UPDATE scratch SET v = v + 1 WHERE id = $1 RETURNING *) SELECT a.* FROM a');
    const run = async (id: number) => {
      const [result] = await batcher.run({ statements: [callWith(bump, [id]) as Call], locks: [], orderKey: `1:${id}` });
      return result?.rows[0] as unknown;
    };
    // Concurrent writes take both connections.
    for (let i = 0; i < 3; i++) await Promise.all([run(1), run(2)]);
    await store.pool.query('ALTER TABLE scratch ADD COLUMN w text');
    expect(await Promise.all([run(1), run(2)])).toEqual([
      { id: 1, v: 4, w: null },
      { id: 2, v: 4, w: null },
    ]);
    await batcher.drain();
  });

  it('tells a stale plan from the other errors of a prepared statement', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('stale_plans_kind'), { poolSize: 1 });
    opened.push(store);
    const client = await store.pool.connect();
    try {
      await client.query('CREATE TABLE scratch (id int PRIMARY KEY)');
      await client.query('PREPARE scratch_all AS SELECT * FROM scratch');
      await client.query('ALTER TABLE scratch ADD COLUMN v int');
      const stale = await client.query('EXECUTE scratch_all').then(
        () => null,
        (error: unknown) => error,
      );
      expect(isStalePlan(stale)).toBe(true);
      const missing = await client.query('EXECUTE no_such_statement').then(
        () => null,
        (error: unknown) => error,
      );
      expect(missing).not.toBeNull();
      expect(isStalePlan(missing)).toBe(false);
    } finally {
      client.release();
    }
  });
});
