import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../src/core/types.js';
import { latestPerTask } from '../../src/store/postgres/listener.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { PG_NOW, T0, pgAdmission, record } from '../support/records.js';
import { freshPostgresUrl } from '../support/postgres.js';

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

function collector() {
  const seen: Array<string | null> = [];
  let wake = () => {};
  return {
    seen,
    onChange: (taskId: string | null) => {
      seen.push(taskId);
      wake();
    },
    next: (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
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

    const t0 = performance.now();
    const waiting = mine.next(5000);
    await writer.transition({
      taskId: 'n1',
      authKey: 'tenant-a/alice',
      write: { status: 'completed', expectedVersion: 1, result: { ok: 1 } },
      correlationId: 'c',
      now: T0,
    });
    await waiting;
    expect(mine.seen).toEqual(['n1']);
    expect(performance.now() - t0).toBeLessThan(1000);

    // A refused write changes nothing and notifies nobody.
    await writer.transition({ taskId: 'n1', authKey: 'tenant-a/alice', write: { status: 'failed', expectedVersion: 2 }, correlationId: 'c', now: T0 });
    await writer.cancel({ authKey: 'tenant-a/alice', taskId: 'n1', now: T0, correlationId: 'c' });
    await mine.next(300);
    expect(mine.seen).toEqual(['n1']);
    expect(theirs.seen).toEqual([]);
  });

  it('a terminal change comes with its record as committed, once; any other change, and a record too large to travel, without', async () => {
    const url = await freshPostgresUrl('listen_record');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const heard: Array<[string | null, number | undefined, TaskRecord | undefined]> = [];
    stops.push(await reader.listen((taskId, version, carried) => heard.push([taskId, version, carried])));
    // Any role that may connect may LISTEN: what it hears of a record is sealed.
    const snoop = new pg.Client(writer.pool.options);
    await snoop.connect();
    const overheard: string[] = [];
    snoop.on('notification', (m) => overheard.push(m.payload ?? ''));
    await snoop.query('LISTEN tasklatch_records');
    stops.push(() => snoop.end());
    await writer.seed([record({ taskId: 'r1' }), record({ taskId: 'r2' })]);
    const write = (taskId: string, status: 'working' | 'completed', expectedVersion: number, result?: unknown) =>
      writer.transition({ taskId, authKey: 'tenant-a/alice', write: { status, expectedVersion, statusMessage: 'm', result }, correlationId: 'c', now: T0 });
    await write('r1', 'working', 1);
    const ended = await write('r1', 'completed', 2, { content: [{ type: 'text', text: 'é done' }] });
    await write('r2', 'completed', 1, { content: [{ type: 'text', text: 'x'.repeat(9000) }] });
    const deadline = performance.now() + 5000;
    while (heard.length < 3 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toEqual([
      ['r1', 2, undefined],
      ['r1', 3, ended.record],
      ['r2', 2, undefined],
    ]);
    expect(overheard).toHaveLength(1);
    const payload = overheard[0] as string;
    const sealed = Buffer.from(payload.slice(payload.indexOf(':') + 1), 'base64').toString('utf8');
    expect(sealed).not.toContain('done');
    expect(sealed).not.toContain('"taskId"');
  });

  it('an admission its worker claimed in the same transaction is one change, at the claimed version', async () => {
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
    const deadline = performance.now() + 5000;
    while (heard.length < 2 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect([...heard].sort()).toEqual([
      ['claimed-1', 2],
      ['plain-1', 1],
    ]);
  });

  it('a change the listener says it knows is not reported; the others are, records included', async () => {
    const url = await freshPostgresUrl('listen_knows');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const heard: Array<[string | null, number | undefined, TaskRecord | undefined]> = [];
    const asked: Array<[string, number]> = [];
    const knows = (taskId: string, version: number) => {
      asked.push([taskId, version]);
      return taskId === 'k1';
    };
    stops.push(await reader.listen((taskId, version, carried) => heard.push([taskId, version, carried]), undefined, undefined, { knows }));
    await writer.seed([record({ taskId: 'k1' }), record({ taskId: 'k2' })]);
    const complete = (taskId: string) =>
      writer.transition({
        taskId,
        authKey: 'tenant-a/alice',
        write: { status: 'completed', expectedVersion: 1, result: { ok: taskId } },
        correlationId: 'c',
        now: T0,
      });
    await complete('k1');
    const second = await complete('k2');
    const deadline = performance.now() + 5000;
    while (heard.length < 1 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 200));
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
    // Every connection of the pool the notifications go out on is busy for a while.
    let busy = true;
    const auditPool = writer['auditPool'];
    const sleeps = Promise.all(Array.from({ length: 4 }, () => auditPool.query('SELECT pg_sleep(1.5)'))).finally(() => (busy = false));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const admitted = await writer.admit(pgAdmission({ taskId: 'nowait' }));
    expect(admitted.decision).toBe('ACCEPT_TASK');
    expect(busy).toBe(true);
    expect(mine.seen).toEqual([]);
    // Committed before it returned: another connection reads it at once.
    expect((await reader.get({ authKey: admitted.record!.authKey, taskId: 'nowait', now: PG_NOW })).decision).toBe('FOUND');
    await sleeps;
    while (mine.seen.length === 0) await mine.next(5000);
    expect(mine.seen).toEqual(['nowait']);
  });

  it('close sends every notification still queued before the pools end', async () => {
    const url = await freshPostgresUrl('listen_close');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const mine = collector();
    stops.push(await reader.listen(mine.onChange));
    const auditPool = writer['auditPool'];
    const sleeps = Promise.all(Array.from({ length: 4 }, () => auditPool.query('SELECT pg_sleep(0.5)')));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ids = Array.from({ length: 20 }, (_, i) => `closing-${i}`);
    await Promise.all(ids.map((taskId) => writer.admit(pgAdmission({ taskId }))));
    // Returned while every notification still waits for a connection.
    expect(mine.seen).toEqual([]);
    await writer.close();
    await sleeps;
    const deadline = performance.now() + 5000;
    while (mine.seen.length < ids.length && performance.now() < deadline) await mine.next(deadline - performance.now());
    expect([...mine.seen].sort()).toEqual([...ids].sort());
  });

  it('reports a notification it cannot send; the write it follows stands', async () => {
    const url = await freshPostgresUrl('listen_fail');
    const writer = await storeAt(url);
    const problems: Array<{ message: string; fields: Record<string, unknown> }> = [];
    writer.onProblem = (message, fields) => problems.push({ message, fields });
    // pg_notify refuses a payload of 8000 bytes or more.
    const taskId = 'x'.repeat(8100);
    expect((await writer.admit(pgAdmission({ taskId }))).decision).toBe('ACCEPT_TASK');
    const deadline = performance.now() + 5000;
    while (problems.length === 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(problems).toEqual([{ message: 'change notifications not sent', fields: expect.objectContaining({ count: 1 }) }]);
    expect((await writer.get({ authKey: 'tenant-a/alice', taskId, now: PG_NOW })).decision).toBe('FOUND');
  });
});
