import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { META_KEYS } from '../../src/core/meta-keys.js';
import type { WireRequest } from '../../src/core/types.js';
import { migratePostgres } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { TASK_COLUMNS } from '../../src/store/task-columns.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { pgAdmission as admission, record } from '../support/records.js';

// A task's concurrency key and limit (migration 020): plain columns that admission and seeding
// write from the stored request, which a claim counts by. Whoever writes the row, they must say
// what the request says: this version's admissions and seeds, a process started before 020
// inserting without naming them, and a status write, which must leave them alone.

const A = 'tenant-a/alice';

function keyed(key: unknown, limit: unknown): WireRequest {
  return { method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { [META_KEYS.concurrency]: { key, limit } } } };
}

interface Columns {
  task_id: string;
  concurrency_key: string | null;
  concurrency_limit: number | null;
}

describe('PostgreSQL concurrency columns', () => {
  let url: string;
  let store: PostgresStore;

  beforeAll(async () => {
    url = await freshPostgresUrl('pg_concurrency_columns');
    store = await PostgresStore.open(url);
  });
  afterAll(async () => store.close());

  const columnsOf = async (taskId: string) =>
    (await store.pool.query<Columns>('SELECT task_id, concurrency_key, concurrency_limit FROM tasks WHERE task_id = $1', [taskId])).rows[0];

  it('are written by admission, alone and batched, claimed or not, as the request gives them', async () => {
    const cases: Array<[unknown, unknown, string | null, number | null]> = [
      ['customer-7', 3, 'customer-7', 3],
      ['customer-8', 1_000_000, 'customer-8', 1_000_000],
      // A limit out of bounds or not a number is no limit; the key stays the key.
      ['customer-9', 0, 'customer-9', null],
      ['customer-9', '3', 'customer-9', null],
      [null, null, null, null],
    ];
    const ids = cases.map((_, i) => `admitted-${i}`);
    // The statements write them themselves: the trigger for older processes' rows is off here.
    await store.pool.query('ALTER TABLE tasks DISABLE TRIGGER tasks_concurrency_inserted');
    try {
      const outs = await Promise.all(
        cases.map(([key, limit], i) =>
          store.admit(
            admission({
              taskId: ids[i],
              authKey: A,
              request: keyed(key, limit),
              claim: i % 2 === 0 ? { owner: 'w', leaseMs: 60_000, maxAttempts: 3, correlationId: 'claim' } : null,
            }),
          ),
        ),
      );
      expect(outs.map((o) => o.decision)).toEqual(cases.map(() => 'ACCEPT_TASK'));
      for (const [i, [, , key, limit]] of cases.entries()) {
        expect(await columnsOf(ids[i] as string)).toEqual({ task_id: ids[i], concurrency_key: key, concurrency_limit: limit });
      }
      const plain = await store.admit(admission({ taskId: 'admitted-plain', authKey: A }));
      expect(plain.decision).toBe('ACCEPT_TASK');
      expect(await columnsOf('admitted-plain')).toEqual({ task_id: 'admitted-plain', concurrency_key: null, concurrency_limit: null });
    } finally {
      await store.pool.query('ALTER TABLE tasks ENABLE TRIGGER tasks_concurrency_inserted');
    }
  });

  it('stay as they are through a status write, and follow a seed that replaces the request', async () => {
    const out = await store.admit(admission({ taskId: 'moved', authKey: A, request: keyed('k1', 2) }));
    const taskId = out.record!.taskId;
    const done = await store.transition({
      taskId,
      authKey: A,
      write: { status: 'completed', expectedVersion: 1, result: { ok: true } },
      correlationId: 'done',
      now: out.record!.createdAt + 1,
    });
    expect(done.decision).toBe('APPLY_TRANSITION');
    expect(await columnsOf(taskId)).toEqual({ task_id: taskId, concurrency_key: 'k1', concurrency_limit: 2 });

    await store.seed([record({ taskId, authKey: A, request: keyed('k2', 5) })]);
    expect(await columnsOf(taskId)).toEqual({ task_id: taskId, concurrency_key: 'k2', concurrency_limit: 5 });
    await store.seed([record({ taskId, authKey: A, request: null })]);
    expect(await columnsOf(taskId)).toEqual({ task_id: taskId, concurrency_key: null, concurrency_limit: null });
  });

  it('are filled in for a row inserted without them, as a process started before 020 inserts', async () => {
    const columns = TASK_COLUMNS.filter((c) => ['task_id', 'auth_key', 'status', 'version', 'created_at_ms', 'last_updated_at_ms', 'request'].includes(c));
    const insert = `INSERT INTO tasks (${columns.join(', ')}) VALUES ($1, $2, 'working', 1, 0, 0, $3)`;
    await store.pool.query(insert, ['older-keyed', A, keyed('k3', 4)]);
    await store.pool.query(insert, ['older-plain', A, { method: 'tools/call', params: { name: 'slow', arguments: {} } }]);
    expect(await columnsOf('older-keyed')).toEqual({ task_id: 'older-keyed', concurrency_key: 'k3', concurrency_limit: 4 });
    expect(await columnsOf('older-plain')).toEqual({ task_id: 'older-plain', concurrency_key: null, concurrency_limit: null });
  });

  it('keep the values the generated columns held when a schema migrates to 020', async () => {
    const fresh = await freshPostgresUrl('pg_concurrency_columns_upgrade');
    const before = await PostgresStore.open(fresh);
    try {
      // The schema as 019 left it: the columns generated again, the functions and triggers gone.
      await before.pool.query(`DROP TRIGGER tasks_concurrency_inserted ON tasks;
        DROP TRIGGER tasks_concurrency_requested ON tasks;
        DROP FUNCTION tasklatch_concurrency_filled;
        DROP INDEX tasks_concurrency;
        ALTER TABLE tasks DROP COLUMN concurrency_key, DROP COLUMN concurrency_limit;
        DROP FUNCTION tasklatch_concurrency_key, tasklatch_concurrency_limit;
        ALTER TABLE tasks ADD COLUMN concurrency_key text GENERATED ALWAYS AS (request #>> '{params,_meta,io.tasklatch/concurrency,key}') STORED;
        ALTER TABLE tasks ADD COLUMN concurrency_limit integer GENERATED ALWAYS AS ((request #> '{params,_meta,io.tasklatch/concurrency,limit}')::integer) STORED;
        CREATE INDEX tasks_concurrency ON tasks (app, tool_name, concurrency_key, lease_expires_at_ms) WHERE concurrency_key IS NOT NULL;
        DELETE FROM tasklatch_migrations WHERE name = '020_concurrency_columns.sql'`);
      await before.pool.query(
        `INSERT INTO tasks (task_id, auth_key, status, version, created_at_ms, last_updated_at_ms, request) VALUES ('kept', $1, 'working', 1, 0, 0, $2)`,
        [A, keyed('k4', 6)],
      );
      expect(await migratePostgres(fresh)).toEqual(['020_concurrency_columns.sql']);
      const row = (await before.pool.query<Columns>(`SELECT task_id, concurrency_key, concurrency_limit FROM tasks WHERE task_id = 'kept'`)).rows[0];
      expect(row).toEqual({ task_id: 'kept', concurrency_key: 'k4', concurrency_limit: 6 });
      const generated = await before.pool.query(
        `SELECT attname FROM pg_attribute WHERE attrelid = 'tasks'::regclass AND attname LIKE 'concurrency_%' AND attgenerated <> ''`,
      );
      expect(generated.rows).toEqual([]);
    } finally {
      await before.close();
    }
  });
});
