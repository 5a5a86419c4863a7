import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../src/core/types.js';
import type { ListenOptions } from '../../src/store/types.js';
import { CHANGES_CHANNEL, RECORDS_CHANNEL, latestPerTask } from '../../src/store/postgres/listener.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { PG_NOW, T0, pgAdmission, record } from '../support/records.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { until } from '../support/until.js';

const open: PostgresStore[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function storeAt(url: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(url, { poolSize: 4 });
  open.push(store);
  return store;
}

/** What a listener hears: each change's task, version and the record it carried, in order. */
type Heard = Array<[string | null, number | undefined, TaskRecord | undefined]>;

/** Listens on `reader` until the test ends; the array fills with what it hears. */
async function hearing(reader: PostgresStore, options?: ListenOptions): Promise<Heard> {
  const heard: Heard = [];
  stops.push(await reader.listen((taskId, version, carried) => heard.push([taskId, version, carried]), undefined, undefined, options));
  return heard;
}

/** Completes a seeded task (version 1) on `store`, its result naming it. */
function completeOn(store: PostgresStore, taskId: string) {
  return store.transition({
    taskId,
    authKey: 'tenant-a/alice',
    write: { status: 'completed', expectedVersion: 1, result: { ok: taskId } },
    correlationId: 'c',
    now: T0,
  });
}

function collector() {
  const seen: Array<string | null> = [];
  return {
    seen,
    onChange: (taskId: string | null) => void seen.push(taskId),
    /** Waits until `taskId` is heard. */
    heard: (taskId: string) => until(() => (seen.includes(taskId) ? true : undefined)),
  };
}

/**
 * Keeps every connection of `pool` busy until `release`: each waits on an advisory lock this
 * test holds, so what the store sends on that pool queues behind them for as long as the test
 * needs, however slow the machine.
 */
async function holdAll(pool: pg.Pool, options: pg.ClientConfig) {
  const gate = new pg.Client(options);
  await gate.connect();
  const key = Math.floor(Math.random() * 1e9);
  await gate.query('SELECT pg_advisory_lock($1)', [key]);
  const size = pool.options.max;
  const held = Promise.all(Array.from({ length: size }, () => pool.query('SELECT pg_advisory_xact_lock_shared($1)', [key])));
  await until(() => (pool.totalCount === size && pool.idleCount === 0 ? true : undefined));
  let released = false;
  return {
    released: () => released,
    release: async () => {
      released = true;
      await gate.query('SELECT pg_advisory_unlock($1)', [key]);
      await gate.end();
      await held;
    },
  };
}

describe('PostgreSQL change notifications', () => {
  it('tell another connection of every committed write in the same schema, and nothing of other schemas', async () => {
    const url = await freshPostgresUrl('listen');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const other = await storeAt(await freshPostgresUrl('listen_other'));
    const mine = collector();
    const theirs = collector();
    stops.push(await reader.listen(mine.onChange), await other.listen(theirs.onChange));
    await writer.seed([record({ taskId: 'n1' })]);

    await writer.transition({
      taskId: 'n1',
      authKey: 'tenant-a/alice',
      write: { status: 'completed', expectedVersion: 1, result: { ok: 1 } },
      correlationId: 'c',
      now: T0,
    });
    await mine.heard('n1');
    expect(mine.seen).toEqual(['n1']);

    // A refused write changes nothing and notifies nobody: a write after them is the next thing heard
    // (one writer's notifications go out in order), in this schema and in the other.
    await writer.transition({ taskId: 'n1', authKey: 'tenant-a/alice', write: { status: 'failed', expectedVersion: 2 }, correlationId: 'c', now: T0 });
    await writer.cancel({ authKey: 'tenant-a/alice', taskId: 'n1', now: T0, correlationId: 'c' });
    await writer.admit(pgAdmission({ taskId: 'after' }));
    await mine.heard('after');
    expect(mine.seen).toEqual(['n1', 'after']);
    await other.admit(pgAdmission({ taskId: 'theirs' }));
    await theirs.heard('theirs');
    expect(theirs.seen).toEqual(['theirs']);
  });

  it('a terminal change comes with its record as committed, once; any other change, and a record too large to travel, without', async () => {
    const url = await freshPostgresUrl('listen_record');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const heard = await hearing(reader);
    // Any role that may connect may LISTEN: what it hears of a record is sealed.
    const snoop = new pg.Client(writer.pool.options);
    await snoop.connect();
    const overheard: string[] = [];
    const overheardChanges: string[] = [];
    // The channel is the database's: test files running beside this one notify on it too, each
    // under its own schema's prefix; only this schema's records are this test's.
    const mySchema = `${new URL(url).searchParams.get('schema')}:`;
    snoop.on('notification', (m) => {
      if (m.payload?.startsWith(mySchema) !== true) return;
      (m.channel === RECORDS_CHANNEL ? overheard : overheardChanges).push(m.payload);
    });
    // The changes too: each session is delivered its notifications on its own, so what the reader
    // heard says nothing of what the snoop has heard; the snoop hearing 'after' does.
    await snoop.query(`LISTEN ${RECORDS_CHANNEL}; LISTEN ${CHANGES_CHANNEL}`);
    stops.push(() => snoop.end());
    await writer.seed([record({ taskId: 'r1' }), record({ taskId: 'r2' })]);
    const write = (taskId: string, status: 'working' | 'completed', expectedVersion: number, result?: unknown) =>
      writer.transition({ taskId, authKey: 'tenant-a/alice', write: { status, expectedVersion, statusMessage: 'm', result }, correlationId: 'c', now: T0 });
    await write('r1', 'working', 1);
    const ended = await write('r1', 'completed', 2, { content: [{ type: 'text', text: 'é done' }] });
    await write('r2', 'completed', 1, { content: [{ type: 'text', text: 'x'.repeat(9000) }] });
    // Heard after everything before it: nothing of those writes is still on its way.
    await writer.admit(pgAdmission({ taskId: 'after' }));
    await until(() => (heard.some(([taskId]) => taskId === 'after') ? true : undefined));
    expect(heard.slice(0, -1)).toEqual([
      ['r1', 2, undefined],
      ['r1', 3, ended.record],
      ['r2', 2, undefined],
    ]);
    await until(() => (overheardChanges.some((p) => p.startsWith(`${mySchema}after:`)) ? true : undefined));
    expect(overheard).toHaveLength(1);
    const payload = overheard[0] as string;
    const sealed = Buffer.from(payload.slice(payload.indexOf(':') + 1), 'base64').toString('utf8');
    expect(sealed).not.toContain('done');
    expect(sealed).not.toContain('"taskId"');
  });

  it('an admission its worker claimed in the same transaction is told to no other process; one it did not claim is', async () => {
    const url = await freshPostgresUrl('listen_claimed');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const heard: Array<[string | null, number | undefined]> = [];
    stops.push(await reader.listen((taskId, version) => heard.push([taskId, version])));
    const claim = { owner: 'w1', leaseMs: 30_000, maxAttempts: 3, correlationId: 'c' };
    const claimed = await writer.admit(pgAdmission({ taskId: 'claimed-1', claim }));
    const plain = await writer.admit(pgAdmission({ taskId: 'plain-1' }));
    expect(claimed.decision === 'ACCEPT_TASK' ? claimed.claimed?.version : null).toBe(2);
    expect(plain.decision === 'ACCEPT_TASK' ? plain.claimed : undefined).toBeNull();
    await writer.admit(pgAdmission({ taskId: 'z-after' }));
    await until(() => (heard.some(([taskId]) => taskId === 'z-after') ? true : undefined));
    expect(heard.slice(0, -1)).toEqual([['plain-1', 1]]);
  });

  it('a change the listener says it knows is not reported; the others are, records included', async () => {
    const url = await freshPostgresUrl('listen_knows');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const asked: Array<[string, number]> = [];
    const knows = (taskId: string, version: number) => {
      asked.push([taskId, version]);
      return taskId === 'k1';
    };
    const heard = await hearing(reader, { knows });
    await writer.seed([record({ taskId: 'k1' }), record({ taskId: 'k2' })]);
    const complete = (taskId: string) => completeOn(writer, taskId);
    await complete('k1');
    const second = await complete('k2');
    // k1 is not reported: once a later change is, k1's is behind us.
    await until(() => (heard.length >= 1 ? true : undefined));
    expect(asked).toEqual([
      ['k1', 2],
      ['k2', 2],
    ]);
    expect(heard).toEqual([['k2', 2, second.record]]);
  });

  it("a batch of notifications keeps each task's latest change, with its record, in the order of those", () => {
    const changes = [
      { taskId: 'a', version: 1 },
      { taskId: 'b', version: 1 },
      { taskId: 'a', version: 2 },
      { taskId: 'c', version: 4 },
      { taskId: 'b', version: 3, record: 'sealed-b' },
      { taskId: 'c', version: 4 },
    ];
    expect(latestPerTask(changes)).toEqual([
      { taskId: 'a', version: 2 },
      { taskId: 'b', version: 3, record: 'sealed-b' },
      { taskId: 'c', version: 4 },
    ]);
    // A version older than one already in the batch never wins.
    expect(
      latestPerTask([
        { taskId: 'a', version: 3 },
        { taskId: 'a', version: 2 },
      ]),
    ).toEqual([{ taskId: 'a', version: 3 }]);
    const distinct = [
      { taskId: 'x', version: 1 },
      { taskId: 'y', version: 1 },
    ];
    expect(latestPerTask(distinct)).toEqual(distinct);
  });

  it('a write returns without waiting for its notification, which still follows, after the commit', async () => {
    const url = await freshPostgresUrl('listen_nowait');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const mine = collector();
    stops.push(await reader.listen(mine.onChange));
    // Every connection of the pool the notifications go out on is busy until the test lets go.
    const busy = await holdAll(writer['auditPool'], writer.pool.options);
    const admitted = await writer.admit(pgAdmission({ taskId: 'nowait' }));
    expect(admitted.decision).toBe('ACCEPT_TASK');
    expect(busy.released()).toBe(false);
    expect(mine.seen).toEqual([]);
    // Committed before it returned: another connection reads it at once.
    expect((await reader.get({ authKey: admitted.record!.authKey, taskId: 'nowait', now: PG_NOW })).decision).toBe('FOUND');
    await busy.release();
    await mine.heard('nowait');
    expect(mine.seen).toEqual(['nowait']);
  });

  it('a write alone that ends a task admitted elsewhere is announced from inside its transaction: heard while the writer can send nothing after its commit', async () => {
    const url = await freshPostgresUrl('listen_intx');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const heard = await hearing(reader);
    await writer.seed([record({ taskId: 'e1' }), record({ taskId: 'e2' }), record({ taskId: 'e3' })]);
    // Every connection the writer notifies on after a commit is busy until the test lets go.
    const busy = await holdAll(writer['auditPool'], writer.pool.options);
    const ended = await writer.transition({
      taskId: 'e1',
      authKey: 'tenant-a/alice',
      write: { status: 'completed', expectedVersion: 1, result: { ok: 1 } },
      correlationId: 'c',
      now: T0,
    });
    await until(() => (heard.length >= 1 ? true : undefined));
    const cancelled = await writer.cancel({ authKey: 'tenant-a/alice', taskId: 'e2', now: T0, correlationId: 'c' });
    await until(() => (heard.length >= 2 ? true : undefined));
    expect(heard).toEqual([
      ['e1', 2, ended.record],
      ['e2', 2, cancelled.record],
    ]);
    // A write that does not end its task is told after its commit; a terminal write queued behind
    // it goes the same way (it would overtake it otherwise), in order, once the pool is free.
    await writer.transition({ taskId: 'e3', authKey: 'tenant-a/alice', write: { status: 'working', expectedVersion: 1 }, correlationId: 'c', now: T0 });
    const third = await writer.transition({
      taskId: 'e3',
      authKey: 'tenant-a/alice',
      write: { status: 'failed', expectedVersion: 2, result: { error: 'x' } },
      correlationId: 'c',
      now: T0,
    });
    // A task this process admitted has its requestor here most likely: its end is told after the
    // commit too (claimed in its admission, it was told to nobody before).
    const claim = { owner: 'w1', leaseMs: 30_000, maxAttempts: 3, correlationId: 'c' };
    expect((await writer.admit(pgAdmission({ taskId: 'e5', claim }))).decision).toBe('ACCEPT_TASK');
    const fifth = await writer.transition({
      taskId: 'e5',
      authKey: 'tenant-a/alice',
      write: { status: 'completed', expectedVersion: 2 },
      correlationId: 'c',
      now: PG_NOW,
    });
    expect(fifth.decision).toBe('APPLY_TRANSITION');
    // Another writer's terminal write, committed after those: heard, and nothing of e3 or e5 before it.
    const other = await storeAt(url);
    await other.seed([record({ taskId: 'e4' })]);
    const fourth = await other.transition({
      taskId: 'e4',
      authKey: 'tenant-a/alice',
      write: { status: 'completed', expectedVersion: 1 },
      correlationId: 'c',
      now: T0,
    });
    await until(() => (heard.length >= 3 ? true : undefined));
    expect(busy.released()).toBe(false);
    expect(heard[2]).toEqual(['e4', 2, fourth.record]);
    await busy.release();
    await until(() => (heard.length >= 6 ? true : undefined));
    expect(heard.slice(3)).toEqual([
      ['e3', 2, undefined],
      ['e3', 3, third.record],
      ['e5', 3, fifth.record],
    ]);
  });

  it("a task waited on in the writer's process ends after the commit, its record left home; one no one waits on there travels with it", async () => {
    const url = await freshPostgresUrl('listen_waited');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const heard = await hearing(reader);
    const waited = new Set(['h1', 'h3']);
    // The writer's own listener says which tasks its process waits on (the change feed's watchers).
    await hearing(writer, { waitedHere: (taskId) => waited.has(taskId) });
    await writer.seed([record({ taskId: 'h1' }), record({ taskId: 'h2' })]);
    // Every connection the writer notifies on after a commit is busy until the test lets go.
    const busy = await holdAll(writer['auditPool'], writer.pool.options);
    // Admitted elsewhere (seeded), waited on by no one here: announced from inside its
    // transaction, with its record, while nothing can go after a commit.
    const second = await completeOn(writer, 'h2');
    await until(() => (heard.length >= 1 ? true : undefined));
    expect(heard).toEqual([['h2', 2, second.record]]);
    // Admitted elsewhere too, but waited on here: told after its commit, and without its record.
    const first = await completeOn(writer, 'h1');
    expect(first.decision).toBe('APPLY_TRANSITION');
    expect(busy.released()).toBe(false);
    await busy.release();
    await until(() => (heard.length >= 2 ? true : undefined));
    expect(heard[1]).toEqual(['h1', 2, undefined]);
    // Admitted here: told after the commit either way; the record travels for the one no one here waits on.
    const claim = { owner: 'w1', leaseMs: 30_000, maxAttempts: 3, correlationId: 'c' };
    for (const taskId of ['h3', 'h4']) expect((await writer.admit(pgAdmission({ taskId, claim }))).decision).toBe('ACCEPT_TASK');
    const end = (taskId: string) =>
      writer.transition({
        taskId,
        authKey: 'tenant-a/alice',
        write: { status: 'completed', expectedVersion: 2, result: { ok: taskId } },
        correlationId: 'c',
        now: PG_NOW,
      });
    const third = await end('h3');
    const fourth = await end('h4');
    expect(third.decision).toBe('APPLY_TRANSITION');
    await until(() => (heard.length >= 4 ? true : undefined));
    expect(heard.slice(2)).toEqual([
      ['h3', 3, undefined],
      ['h4', 3, fourth.record],
    ]);
  });

  it('writes batched under load are announced after their commit, where the batch shares one statement', async () => {
    const url = await freshPostgresUrl('listen_batched');
    const writer = await PostgresStore.open(url, { poolSize: 4, writeBatch: { inFlight: 1 } });
    open.push(writer);
    const reader = await storeAt(url);
    const heard = await hearing(reader);
    await writer.seed(['b0', 'b1', 'b2'].map((taskId) => record({ taskId })));
    // b0's row is locked: its write, out alone, waits at the server while b1 and b2 queue behind it.
    const locker = new pg.Client(writer.pool.options);
    await locker.connect();
    stops.push(() => locker.end());
    await locker.query("BEGIN; SELECT 1 FROM tasks WHERE task_id = 'b0' FOR UPDATE");
    const busy = await holdAll(writer['auditPool'], writer.pool.options);
    const complete = (taskId: string) => completeOn(writer, taskId);
    // b0's batch is out until the lock is let go (one batch at a server at once): b1 and b2 share the next.
    const first = complete('b0');
    const rest = Promise.all([complete('b1'), complete('b2')]);
    await locker.query('COMMIT');
    const [b0, [b1, b2]] = await Promise.all([first, rest]);
    // b0 went alone: announced as it committed. b1 and b2 went together: after their commit, on the held pool.
    const other = await storeAt(url);
    await other.seed([record({ taskId: 'b9' })]);
    await other.transition({ taskId: 'b9', authKey: 'tenant-a/alice', write: { status: 'completed', expectedVersion: 1 }, correlationId: 'c', now: T0 });
    await until(() => (heard.some(([taskId]) => taskId === 'b9') ? true : undefined));
    expect(heard.map(([taskId]) => taskId)).toEqual(['b0', 'b9']);
    expect(heard[0]).toEqual(['b0', 2, b0.record]);
    await busy.release();
    await until(() => (heard.length >= 4 ? true : undefined));
    expect(heard.slice(2)).toEqual([
      ['b1', 2, b1.record],
      ['b2', 2, b2.record],
    ]);
  });

  it('close sends every notification still queued before the pools end', async () => {
    const url = await freshPostgresUrl('listen_close');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const mine = collector();
    stops.push(await reader.listen(mine.onChange));
    const busy = await holdAll(writer['auditPool'], writer.pool.options);
    const ids = Array.from({ length: 20 }, (_, i) => `closing-${i}`);
    await Promise.all(ids.map((taskId) => writer.admit(pgAdmission({ taskId }))));
    // Returned while every notification still waits for a connection.
    expect(mine.seen).toEqual([]);
    // The close begins while they wait; they go out once a connection is free, before the pools end.
    const closing = writer.close();
    await busy.release();
    await closing;
    await until(() => (mine.seen.length >= ids.length ? true : undefined));
    expect([...mine.seen].sort()).toEqual([...ids].sort());
  });

  it('a write that ends its task whose notification the server refuses inside its transaction commits once without it, and reports it after', async () => {
    const url = await freshPostgresUrl('listen_refused');
    const writer = await storeAt(url);
    const problems: Array<{ message: string; fields: Record<string, unknown> }> = [];
    writer.onProblem = (message, fields) => problems.push({ message, fields });
    // pg_notify refuses a payload of 8000 bytes or more: the change's own, `taskId:version`.
    const taskId = 'y'.repeat(8100);
    await writer.seed([record({ taskId })]);
    const out = await writer.transition({ taskId, authKey: 'tenant-a/alice', write: { status: 'completed', expectedVersion: 1 }, correlationId: 'c', now: T0 });
    expect(out.decision).toBe('APPLY_TRANSITION');
    expect(out.record?.version).toBe(2);
    const stored = await writer.get({ authKey: 'tenant-a/alice', taskId, now: PG_NOW });
    expect(stored.record?.status).toBe('completed');
    expect(stored.record?.version).toBe(2);
    await until(() => (problems.length > 0 ? true : undefined));
    expect(problems).toEqual([{ message: 'change notifications not sent', fields: expect.objectContaining({ count: 1 }) }]);
  });

  it('reports a notification it cannot send; the write it follows stands', async () => {
    const url = await freshPostgresUrl('listen_fail');
    const writer = await storeAt(url);
    const problems: Array<{ message: string; fields: Record<string, unknown> }> = [];
    writer.onProblem = (message, fields) => problems.push({ message, fields });
    // pg_notify refuses a payload of 8000 bytes or more.
    const taskId = 'x'.repeat(8100);
    expect((await writer.admit(pgAdmission({ taskId }))).decision).toBe('ACCEPT_TASK');
    await until(() => (problems.length > 0 ? true : undefined));
    expect(problems).toEqual([{ message: 'change notifications not sent', fields: expect.objectContaining({ count: 1 }) }]);
    expect((await writer.get({ authKey: 'tenant-a/alice', taskId, now: PG_NOW })).decision).toBe('FOUND');
  });
});
