import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { callWith, prepared } from '../../src/store/postgres/prepared.js';
import { WriteBatcher, type BatchedWrite } from '../../src/store/postgres/write-batcher.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { holdWriteSlot } from '../support/write-slot.js';
import { pgAdmission } from '../support/records.js';

const open: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function storeAt(label: string, inFlight = 1): Promise<PostgresStore> {
  const store = await PostgresStore.open(await freshPostgresUrl(label), { poolSize: 6, writeBatch: { inFlight } });
  open.push(store);
  return store;
}

// Each write says which transaction it ran in: writes of one batch share one.
const insertNote = prepared('INSERT INTO notes (n) VALUES ($1) RETURNING n, txid_current()::text AS tx');

function note(n: number): BatchedWrite {
  return { statements: [callWith(insertNote, [n])!], locks: [`notes:${n % 3}`], orderKey: String(n) };
}

describe('PostgreSQL write batches', () => {
  it('give concurrent writes one transaction and each write its own results, after the commit', async () => {
    const store = await storeAt('batch_results');
    await store.pool.query('CREATE TABLE notes (n int PRIMARY KEY)');
    const batcher = new WriteBatcher(store.pool, { inFlight: 1 });
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, n) => {
        const [inserted] = await batcher.run(note(n));
        // Resolved means committed: another connection sees the row at once.
        const seen = await store.pool.query('SELECT 1 FROM notes WHERE n = $1', [n]);
        const row = inserted?.rows[0] as { n: number; tx: string };
        return { n, got: row.n, tx: row.tx, seen: seen.rowCount };
      }),
    );
    for (const r of results) expect(r).toMatchObject({ n: r.n, got: r.n, seen: 1 });
    // The first write goes alone; the 39 that queued behind it share one transaction.
    const transactions = new Set(results.map((r) => r.tx));
    expect(transactions.size).toBe(2);
  });

  it('fail only the write whose statement fails; the others of its batch commit', async () => {
    const store = await storeAt('batch_failure');
    await store.pool.query('CREATE TABLE notes (n int PRIMARY KEY)');
    await store.pool.query('INSERT INTO notes (n) VALUES (7)');
    const batcher = new WriteBatcher(store.pool, { inFlight: 1 });
    // Held at the server so that the next writes queue into one batch behind it.
    const first = batcher.run({ statements: ['SELECT pg_sleep(0.2)'], locks: [], orderKey: 'a' });
    const outcomes = await Promise.allSettled([5, 6, 7, 8].map((n) => batcher.run(note(n))));
    await first;
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    const stored = await store.pool.query<{ n: number }>('SELECT n FROM notes ORDER BY n');
    expect(stored.rows.map((r) => r.n)).toEqual([5, 6, 7, 8]);
  });

  it('fail every write of a batch whose connection is lost, and leave nothing half written', async () => {
    const store = await storeAt('batch_lost');
    await store.pool.query('CREATE TABLE notes (n int PRIMARY KEY)');
    const batcher = new WriteBatcher(store.pool, { inFlight: 1 });
    const first = batcher.run({ statements: ['SELECT pg_sleep(0.2)'], locks: [], orderKey: 'a' });
    const doomed = [1, 2, 3].map((n) => batcher.run(note(n)));
    // The batch of 1–3 ends its own connection before COMMIT.
    const killer = batcher.run({ statements: ['SELECT pg_terminate_backend(pg_backend_pid())'], locks: [], orderKey: '9' });
    await first;
    const outcomes = await Promise.allSettled([...doomed, killer]);
    expect(outcomes.every((o) => o.status === 'rejected')).toBe(true);
    expect((await store.pool.query('SELECT count(*)::int AS n FROM notes')).rows[0]).toEqual({ n: 0 });
  });

  it('decide each admission of one batch on what the ones before it wrote: one key, one task', async () => {
    const store = await storeAt('batch_keys');
    const slot = await holdWriteSlot(store);
    const admitted = Array.from({ length: 12 }, (_, i) =>
      store.admit(pgAdmission({ taskId: `t-${i}`, idempotencyKey: 'same-key', maxActive: 100, maxStored: 1000, correlationId: `c-${i}` })),
    );
    await slot.release();
    const outcomes = await Promise.all(admitted);
    const decisions = outcomes.map((o) => o.decision).sort();
    expect(decisions.filter((d) => d === 'ACCEPT_TASK')).toHaveLength(1);
    expect(decisions.filter((d) => d === 'REPLAY_TASK')).toHaveLength(11);
    const taskIds = new Set(outcomes.map((o) => o.record?.taskId));
    expect(taskIds.size).toBe(1);
  });

  it('count the admissions of the same batch against the active-task bound', async () => {
    const store = await storeAt('batch_bound');
    const slot = await holdWriteSlot(store);
    const admitted = Array.from({ length: 12 }, (_, i) => store.admit(pgAdmission({ taskId: `b-${i}`, maxActive: 5, correlationId: `c-${i}` })));
    await slot.release();
    const outcomes = await Promise.all(admitted);
    expect(outcomes.filter((o) => o.decision === 'ACCEPT_TASK')).toHaveLength(5);
    expect(outcomes.filter((o) => o.decision === 'BLOCK_TASK_LIMIT')).toHaveLength(7);
  });
});
