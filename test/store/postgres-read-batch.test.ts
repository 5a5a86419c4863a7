import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadBatcher } from '../../src/store/postgres/read-batcher.js';
import { readById } from '../../src/store/postgres/reads.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { pgAdmission } from '../support/records.js';

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function storeAt(label: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(await freshPostgresUrl(label), { poolSize: 4 });
  open.push(store);
  return store;
}

/** A pool of the store's schema that counts the statements it sends. */
function countingPool(store: PostgresStore): { pool: pg.Pool; sent: () => number } {
  // The store's own connection settings: its schema, on its search path.
  const pool = new pg.Pool({ ...store.pool.options, max: 4 });
  open.push({ close: () => pool.end() });
  let sent = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    sent += 1;
    return query(...args);
  };
  return { pool, sent: () => sent };
}

describe('PostgreSQL reads of many callers in one statement', () => {
  it('answers each reader for its own auth key and clock, whatever else shares the statement', async () => {
    const store = await storeAt('read_batch_auth');
    const alice = await store.admit(pgAdmission({ authKey: 'acme/alice', ttl: 1000 }));
    const bob = await store.admit(pgAdmission({ authKey: 'globex/bob', ttl: null }));
    const created = alice.record!.createdAt;
    const { pool, sent } = countingPool(store);
    const reads = new ReadBatcher(pool, { inFlight: 1 });
    const asked = [
      reads.visible(alice.record!.taskId, 'acme/alice', created),
      // The same task, another caller: nothing, though the row shares the statement.
      reads.visible(alice.record!.taskId, 'globex/bob', created),
      // The same task and caller at a clock past its expiry: nothing for this reader only.
      reads.visible(alice.record!.taskId, 'acme/alice', created + 1000),
      reads.visible(bob.record!.taskId, 'globex/bob', created + 10_000_000),
      reads.visible('no-such-task', 'acme/alice', created),
    ];
    const rows = await Promise.all(asked);
    expect(rows.map((r) => r?.task_id ?? null)).toEqual([alice.record!.taskId, null, null, bob.record!.taskId, null]);
    // Asked in one turn of the event loop: one statement, sent at the end of the turn.
    expect(sent()).toBe(1);
    // A read asked while a statement is out goes in the next one.
    const first = reads.visible(alice.record!.taskId, 'acme/alice', created);
    while (sent() < 2) await new Promise((resolve) => setImmediate(resolve));
    const second = reads.visible(bob.record!.taskId, 'globex/bob', created);
    expect([(await first)?.task_id, (await second)?.task_id]).toEqual([alice.record!.taskId, bob.record!.taskId]);
    expect(sent()).toBe(3);
  });

  it('waits a few turns of the event loop for more reads to join a statement', async () => {
    const store = await storeAt('read_batch_gather');
    const tasks = await Promise.all([1, 2, 3].map(async () => (await store.admit(pgAdmission({ authKey: 'acme/alice' }))).record!));
    const { pool, sent } = countingPool(store);
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const overTurns = async (reads: ReadBatcher) => {
      const asked = [];
      for (const t of tasks) {
        asked.push(reads.visible(t.taskId, 'acme/alice', t.createdAt));
        await turn();
      }
      return (await Promise.all(asked)).map((row) => row?.task_id);
    };
    // Asked in three successive turns, with statements free to go out side by side: one statement
    // when it waits four turns, three when it waits none. The turns decide here, not the 1 ms cap
    // (three turns of a busy machine's event loop can take longer).
    expect(await overTurns(new ReadBatcher(pool, { gatherTurns: 4, gatherMs: 60_000, inFlight: 3 }))).toEqual(tasks.map((t) => t.taskId));
    expect(sent()).toBe(1);
    expect(await overTurns(new ReadBatcher(pool, { gatherTurns: 0, inFlight: 3 }))).toEqual(tasks.map((t) => t.taskId));
    expect(sent()).toBe(4);
    // Not past maxBatch: two reads of one turn with maxBatch 2 go out without waiting.
    const full = new ReadBatcher(pool, { gatherTurns: 1000, maxBatch: 2 });
    const both = Promise.all(tasks.slice(0, 2).map((t) => full.visible(t.taskId, 'acme/alice', t.createdAt)));
    await turn();
    expect(sent()).toBe(5);
    await both;
  });

  it('never answers a read from a statement sent before it was asked', async () => {
    const store = await storeAt('read_batch_fresh');
    const admitted = await store.admit(pgAdmission({ authKey: 'acme/alice', ttl: null }));
    const { taskId, version } = admitted.record!;
    const { pool } = countingPool(store);
    const reads = new ReadBatcher(pool, { inFlight: 1 });
    // A read goes out; a write commits while it is out; a read asked after the commit must see it.
    const first = reads.visible(taskId, 'acme/alice', admitted.record!.createdAt);
    await store.transition({
      taskId,
      authKey: 'acme/alice',
      write: { status: 'completed', expectedVersion: version, result: { content: [] } },
      correlationId: 'c',
      now: admitted.record!.createdAt,
    });
    const second = await reads.visible(taskId, 'acme/alice', admitted.record!.createdAt);
    expect(second?.status).toBe('completed');
    expect(second?.version).toBe(version + 1);
    expect((await first)?.task_id).toBe(taskId);
  });

  it('reads a record through its JSON exactly as through its columns', async () => {
    const store = await storeAt('read_batch_json');
    // Text that JSON escapes, numbers at the edges of a double, nested values, and a ttl past 2^31.
    const awkward = 'quote " backslash \\ brace } bracket ] line\nbreak tab\t emoji 🧾 ünïcödé \u2028';
    const request = {
      method: 'tools/call',
      params: { name: 'slow', arguments: { text: awkward, big: 9007199254740991, small: 1e-7, neg: -0.5, list: [null, true, { a: [] }] } },
    };
    const admitted = await store.admit(pgAdmission({ authKey: `acme/${awkward}`, request, ttl: 3_000_000_000, correlationId: awkward }));
    const { taskId, version, createdAt } = admitted.record!;
    const result = { content: [{ type: 'text', text: awkward }], structuredContent: { n: 9007199254740991, f: 0.1 }, isError: false };
    const done = await store.transition({
      taskId,
      authKey: `acme/${awkward}`,
      write: { status: 'completed', expectedVersion: version, result },
      correlationId: 'c',
      now: createdAt + 1,
    });
    expect(done.decision).toBe('APPLY_TRANSITION');
    const batched = await store.get({ authKey: `acme/${awkward}`, taskId, now: createdAt + 2 });
    expect(batched.decision).toBe('FOUND');
    expect(batched.record).toStrictEqual(await readById(store.pool, taskId));
    expect(batched.record).toMatchObject({ request, result, correlationId: awkward, ttl: 3_000_000_000, expiresAt: createdAt + 3_000_000_000 });
  });

  it('refuses a read PostgreSQL cannot hold before it joins, answers the reads beside it, and goes on with the next', async () => {
    const store = await storeAt('read_batch_fail');
    const admitted = await store.admit(pgAdmission({ authKey: 'acme/alice', ttl: null }));
    const { pool } = countingPool(store);
    const reads = new ReadBatcher(pool, { inFlight: 1 });
    // An id PostgreSQL cannot hold (a NUL in text) would fail the statement it is in.
    const bad = [reads.visible('bad\u0000id', 'acme/alice', 0), reads.visible(admitted.record!.taskId, 'acme/alice', 0)];
    const settled = await Promise.allSettled(bad);
    expect(settled[0]).toMatchObject({ status: 'rejected', reason: { code: 'INVALID_INPUT' } });
    expect(settled[1]).toMatchObject({ status: 'fulfilled', value: { task_id: admitted.record!.taskId } });
    const next = await reads.visible(admitted.record!.taskId, 'acme/alice', 0);
    expect(next?.task_id).toBe(admitted.record!.taskId);
  });

  it('answers a row that has not changed with the row it kept, and any write of it with the stored row', async () => {
    const store = await storeAt('read_batch_kept');
    const admitted = await store.admit(pgAdmission({ authKey: 'acme/alice', ttl: 60_000 }));
    const { taskId, createdAt } = admitted.record!;
    const { pool, sent } = countingPool(store);
    const reads = new ReadBatcher(pool, { inFlight: 1 });
    const first = await reads.visible(taskId, 'acme/alice', createdAt);
    const again = await reads.visible(taskId, 'acme/alice', createdAt);
    // Asked of the database each time; the same row object is the answer when it is current.
    expect(sent()).toBe(2);
    expect(again).toBe(first);
    expect(Object.isFrozen(again) && Object.isFrozen(again!.request)).toBe(true);
    // A write that leaves the version as it was (a lease renewed) is seen at once.
    await pool.query('UPDATE tasks SET lease_owner = $2, lease_expires_at_ms = $3 WHERE task_id = $1', [taskId, 'w1', createdAt + 5000]);
    const renewed = await reads.visible(taskId, 'acme/alice', createdAt);
    expect(renewed).not.toBe(first);
    expect(renewed).toMatchObject({ version: first!.version, lease_owner: 'w1', lease_expires_at_ms: createdAt + 5000 });
    // So is a row seeded over it with the same version, and one deleted and admitted again.
    await store.seed([{ ...admitted.record!, statusMessage: 'seeded' }]);
    expect((await reads.visible(taskId, 'acme/alice', createdAt))?.status_message).toBe('seeded');
    await pool.query('DELETE FROM tasks WHERE task_id = $1', [taskId]);
    await store.admit(pgAdmission({ taskId, authKey: 'acme/alice', ttl: 60_000, correlationId: 'again' }));
    expect((await reads.visible(taskId, 'acme/alice', createdAt))?.correlation_id).toBe('again');
    // Owner and expiry are judged on the stored row, kept or not.
    const kept = await reads.visible(taskId, 'acme/alice', createdAt);
    expect(await reads.visible(taskId, 'globex/bob', createdAt)).toBeUndefined();
    expect(await reads.visible(taskId, 'acme/alice', createdAt + 60_000)).toBeUndefined();
    // Dropped once the caller could not see it: the next read gets the row whole again.
    expect(await reads.visible(taskId, 'acme/alice', createdAt)).not.toBe(kept);
  });

  it('keeps at most the rows and bytes it is given', async () => {
    const store = await storeAt('read_batch_bounds');
    const tasks = await Promise.all([1, 2, 3].map(async () => (await store.admit(pgAdmission({ authKey: 'acme/alice' }))).record!));
    const { pool } = countingPool(store);
    const byRows = new ReadBatcher(pool, { keepRows: 2 });
    const read = (reads: ReadBatcher) => Promise.all(tasks.map((t) => reads.visible(t.taskId, 'acme/alice', t.createdAt)));
    const before = await read(byRows);
    const after = await read(byRows);
    // Three rows came in one statement; the first was dropped for the other two.
    expect(after.map((row, i) => row === before[i])).toEqual([false, true, true]);
    const none = new ReadBatcher(pool, { keepBytes: 0 });
    const first = await read(none);
    expect((await read(none)).some((row, i) => row === first[i])).toBe(false);
  });
});
