import { afterEach, describe, expect, it } from 'vitest';
import { isStalePlan } from '../../src/store/postgres/prepared.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { oneTask, tasksAtOnce } from '../support/store-tasks.js';

// A PostgreSQL store connected directly while a newer version migrates its schema: a column added
// to tasks changes what the store's prepared statements return (`RETURNING *`, `SELECT *`), and
// PostgreSQL refuses to run them as prepared ("cached plan must not change result type"). The same
// behind a pooler, where the statements are functions: postgres-pooled.test.ts.

const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

describe('a PostgreSQL store whose schema a newer version migrates while it runs', () => {
  it('admits, claims and completes tasks across a column added to tasks, its connections preparing their statements again', async () => {
    // Two connections, each used many times: each has prepared the statements before the migration.
    const store = await PostgresStore.open(await freshPostgresUrl('stale_plans'), { poolSize: 2 });
    opened.push(store);
    for (let i = 0; i < 3; i++) await oneTask(store);
    await tasksAtOnce(store, 4);
    await store.pool.query('ALTER TABLE tasks ADD COLUMN added_by_a_migration text');
    // The claim and the status write return every column of tasks: as prepared before, each would
    // now fail on every connection that prepared it.
    await tasksAtOnce(store, 4);
    const { done, read } = await oneTask(store);
    expect(read).toEqual(done);
    await tasksAtOnce(store, 4);
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
