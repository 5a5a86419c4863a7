import { afterEach, describe, expect, it } from 'vitest';
import { isTasklatchError, TasklatchError } from '../../src/core/errors.js';
import { AuditWriter } from '../../src/store/audit-writer.js';
import { upsertReadAuditIn } from '../../src/store/postgres/audit.js';
import { isConnectionFailure, isStatementError, parsePostgresUrl, unavailable } from '../../src/store/postgres/connection.js';
import { ReadBatcher } from '../../src/store/postgres/read-batcher.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { WriteBatcher } from '../../src/store/postgres/write-batcher.js';
import type { AuditEntry, ProgressEvent } from '../../src/store/types.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { holdWriteSlot } from '../support/write-slot.js';
import { pgAdmission, PG_NOW } from '../support/records.js';

// One caller's bad data fails that caller alone, in every batch the PostgreSQL store makes:
// reads, admissions, terminal writes, read-audit rows, progress and change notifications.

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function storeAt(label: string): Promise<PostgresStore> {
  // One batch at the server at a time: what queues behind it goes out as one batch.
  const store = await PostgresStore.open(await freshPostgresUrl(label), { poolSize: 6, writeBatch: { inFlight: 1 } });
  open.push(store);
  return store;
}

const invalidInput = (reason: unknown) => isTasklatchError(reason, 'INVALID_INPUT');

describe('a member of a PostgreSQL batch fails alone', () => {
  it('in a read batch: a NUL task id and a lone surrogate in an auth key are refused, the reads beside them answered', async () => {
    const store = await storeAt('member_read');
    const admitted = await Promise.all([1, 2, 3].map(() => store.admit(pgAdmission({ authKey: 'acme/innocent' }))));
    const ids = admitted.map((a) => a.record!.taskId);
    // One turn: the reads share a statement.
    const reads = [
      store.get({ authKey: 'acme/innocent', taskId: ids[0]!, now: PG_NOW }),
      store.get({ authKey: 'acme/innocent', taskId: 'bad\u0000id', now: PG_NOW }),
      store.get({ authKey: 'u\ud800', taskId: ids[1]!, now: PG_NOW }),
      store.get({ authKey: 'acme/innocent', taskId: ids[1]!, now: PG_NOW }),
      store.get({ authKey: 'u\udc00', taskId: ids[2]!, now: PG_NOW }),
      store.get({ authKey: 'acme/innocent', taskId: ids[2]!, now: PG_NOW }),
    ];
    const settled = await Promise.allSettled(reads);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
    for (const i of [1, 2, 4]) expect(invalidInput((settled[i] as PromiseRejectedResult).reason)).toBe(true);
    for (const i of [0, 3, 5]) expect((settled[i] as PromiseFulfilledResult<{ decision: string }>).value.decision).toBe('FOUND');
  });

  it('in a read batch: a statement the database refuses for one read is sent again read by read', async () => {
    const store = await storeAt('member_read_retry');
    const admitted = await store.admit(pgAdmission({ authKey: 'acme/innocent', ttl: 60_000 }));
    const hostile = await store.admit(pgAdmission({ authKey: 'acme/hostile', ttl: 60_000 }));
    const reads = new ReadBatcher(store.pool, { inFlight: 1 });
    // A clock no bigint holds fails the cast of the statement for the one reader whose row it finds.
    const settled = await Promise.allSettled([
      reads.visible(admitted.record!.taskId, 'acme/innocent', PG_NOW),
      reads.visible(hostile.record!.taskId, 'acme/hostile', 1e30),
      reads.visible(admitted.record!.taskId, 'acme/innocent', PG_NOW + 1),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: '22P02' });
    expect((settled[0] as PromiseFulfilledResult<{ task_id: string } | undefined>).value?.task_id).toBe(admitted.record!.taskId);
  });

  it('in an admission batch: a NUL, a lone surrogate or an index row too large fails only its own admission', async () => {
    const store = await storeAt('member_admit');
    const slot = await holdWriteSlot(store);
    // Settled as they end: a refused one must not wait unhandled for the slot.
    const admissions = Promise.allSettled([
      store.admit(pgAdmission({ authKey: 'acme/innocent', correlationId: 'i-1' })),
      store.admit(pgAdmission({ authKey: 'acme/hostile', toolName: 'slow\u0000' })),
      store.admit(pgAdmission({ authKey: 'acme/innocent', correlationId: 'i-2', idempotencyKey: 'k-1', maxActive: 50 })),
      store.admit(pgAdmission({ authKey: 'acme/hostile', idempotencyKey: 'k\u0000', maxActive: 50 })),
      store.admit(pgAdmission({ authKey: 'acme/hostile', request: { method: 'tools/call', params: { name: 'slow', arguments: { s: 'x\udc00' } } } })),
      store.admit(pgAdmission({ authKey: 'acme/hostile', request: { method: 'tools/call', params: { name: 'slow', arguments: { s: 'x\u0000' } } } })),
      // Storable, but no index holds it: the statement fails for this admission's data.
      store.admit(pgAdmission({ authKey: 'acme/hostile', taskId: randomText(4000) })),
      store.admit(pgAdmission({ authKey: 'acme/innocent', correlationId: 'i-3' })),
    ]);
    await slot.release();
    const settled = await admissions;
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    for (const i of [1, 3, 4, 5]) expect(invalidInput((settled[i] as PromiseRejectedResult).reason)).toBe(true);
    // The database's refusal is the member's own, never an outage.
    expect(isTasklatchError((settled[6] as PromiseRejectedResult).reason, 'STORE_UNAVAILABLE')).toBe(false);
    for (const i of [0, 2, 7]) expect((settled[i] as PromiseFulfilledResult<{ decision: string }>).value.decision).toBe('ACCEPT_TASK');
    const stored = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks WHERE auth_key = 'acme/hostile'`);
    expect(stored.rows[0]!.n).toBe(0);
  });

  it('in a write batch: a message the server refuses (08P01, which closes its connection) is the statement fault of one write, not an outage', async () => {
    const store = await storeAt('member_protocol');
    await store.pool.query('CREATE TABLE notes (n int PRIMARY KEY)');
    const batcher = new WriteBatcher(store.pool, { inFlight: 1 });
    // Held at the server so that the next writes queue into one batch behind it.
    const first = batcher.run({ statements: ['SELECT pg_sleep(0.2)'], locks: [], orderKey: 'a' });
    const note = (n: number) => ({ statements: [`INSERT INTO notes (n) VALUES (${n})`], locks: [], orderKey: String(n) });
    // Past the store's own checks (a statement written by hand): a NUL inside the message.
    const broken = { statements: ["SELECT 'a\u0000b'"], locks: [], orderKey: '2' };
    const outcomes = Promise.allSettled([batcher.run(note(1)), batcher.run(broken), batcher.run(note(3))]);
    await first;
    const settled = await outcomes;
    expect(settled.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const reason = (settled[1] as PromiseRejectedResult).reason as { code?: string };
    expect(reason.code).toBe('08P01');
    const stored = await store.pool.query<{ n: number }>('SELECT n FROM notes ORDER BY n');
    expect(stored.rows.map((r) => r.n)).toEqual([1, 3]);
  });

  it('in a terminal write batch: a NUL status message or a lone surrogate in a result fails only its own write', async () => {
    const store = await storeAt('member_terminal');
    const tasks = await Promise.all([1, 2, 3, 4].map(() => store.admit(pgAdmission({ authKey: 'acme/innocent' }))));
    const [a, b, c, d] = tasks.map((t) => t.record!);
    const slot = await holdWriteSlot(store);
    const complete = (taskId: string, write: { result?: unknown; statusMessage?: string }) =>
      store.transition({ taskId, authKey: 'acme/innocent', write: { status: 'completed', expectedVersion: 1, ...write }, correlationId: 'c', now: PG_NOW + 1 });
    const writes = Promise.allSettled([
      complete(a!.taskId, { result: { content: [{ type: 'text', text: 'fine' }] } }),
      complete(b!.taskId, { result: { content: [] }, statusMessage: 'done\u0000' }),
      complete(c!.taskId, { result: { content: [{ type: 'text', text: 'half \ud83d' }] } }),
      complete(d!.taskId, { result: { content: [{ type: 'text', text: 'fine too' }] } }),
    ]);
    await slot.release();
    const settled = await writes;
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    for (const i of [1, 2]) expect(invalidInput((settled[i] as PromiseRejectedResult).reason)).toBe(true);
    for (const i of [0, 3]) expect((settled[i] as PromiseFulfilledResult<{ decision: string }>).value.decision).toBe('APPLY_TRANSITION');
    // The refused writes changed nothing.
    for (const t of [b!, c!]) expect((await store.get({ authKey: 'acme/innocent', taskId: t.taskId, now: PG_NOW + 2 })).record?.status).toBe('working');
  });

  it('in a read-audit batch: a line that cannot be stored is dropped before it joins, and the batch is one statement', async () => {
    const store = await storeAt('member_audit');
    let statements = 0;
    const problems: string[] = [];
    const writer = new AuditWriter(
      async (batch) => {
        statements += 1;
        await upsertReadAuditIn(store.pool, batch);
      },
      { isLineError: (error) => /^(22|23|54)/.test(String((error as { code?: unknown }).code)), onProblem: (message) => problems.push(message), gatherMs: 0 },
    );
    const line = (authKey: string, taskId: string): AuditEntry => ({
      at: PG_NOW,
      surface: 'read',
      decision: 'RETURN_STATUS',
      authKey,
      taskId,
      correlationId: 'c',
    });
    writer.count(line('acme/innocent', 'a'));
    writer.count(line('u\ud800', 'a'));
    writer.count(line('acme/innocent', 'b'));
    writer.count(line('n\u0000', 'b'));
    writer.count(line('acme/innocent', 'c'));
    await writer.drain(10_000);
    const stored = await store.pool.query<{ auth_key: string; task_key: string }>('SELECT auth_key, task_key FROM task_read_audit ORDER BY task_key');
    expect(stored.rows).toEqual([
      { auth_key: 'acme/innocent', task_key: 'a' },
      { auth_key: 'acme/innocent', task_key: 'b' },
      { auth_key: 'acme/innocent', task_key: 'c' },
    ]);
    expect(statements).toBe(1);
    // Reported once, not once per line.
    expect(problems.filter((p) => /not storable/.test(p))).toHaveLength(1);
  });

  it('in a notification batch: a change the server refuses (a payload too long) loses neither the progress nor the changes beside it', async () => {
    const store = await storeAt('member_notify');
    const heard: Array<ProgressEvent | string> = [];
    let sentinelHeard: () => void = () => undefined;
    const sentinel = new Promise<void>((resolve) => (sentinelHeard = resolve));
    let sentinelId = '';
    const stop = await store.listen(
      (taskId) => {
        if (taskId !== null) heard.push(taskId);
        if (taskId === sentinelId) sentinelHeard();
      },
      undefined,
      (event) => heard.push(event),
    );
    open.push({ close: stop });
    // A task id whose change notification is longer than PostgreSQL takes (8000 bytes); it
    // compresses, so the task's own row is stored.
    const long = await store.admit(pgAdmission({ authKey: 'acme/hostile', taskId: 'x'.repeat(9000) }));
    expect(long.decision).toBe('ACCEPT_TASK');
    // The admission's change waits for the next turn to go out: this progress goes with it.
    store.publishProgress({ taskId: 'innocent-task', progress: 1, total: 2, message: 'half way', origin: 'w' });
    store.publishProgress({ taskId: 'hostile-task', progress: 1, message: 'bad\u0000', origin: 'w' });
    const last = await store.admit(pgAdmission({ authKey: 'acme/innocent' }));
    sentinelId = last.record!.taskId;
    await sentinel;
    expect(heard.filter((h) => typeof h !== 'string').map((e) => e.taskId)).toEqual(['innocent-task']);
    expect(heard).toContain(sentinelId);
  });
});

describe('telling an outage from a statement the server refused', () => {
  it.each([
    [Object.assign(new Error('invalid message format'), { code: '08P01', severity: 'FATAL' }), false, true],
    [Object.assign(new Error('connection failure'), { code: '08006', severity: 'FATAL' }), true, false],
    [Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' }), true, false],
    [Object.assign(new Error('invalid input syntax for type json'), { code: '22P02', severity: 'ERROR' }), false, true],
    [Object.assign(new Error('index row size exceeds maximum'), { code: '54000', severity: 'ERROR' }), false, true],
    [new Error('Connection terminated unexpectedly'), true, false],
    [new TasklatchError('STORE_UNAVAILABLE', 'cannot connect'), false, false],
  ])('%s: outage %s, statement error %s', (error, outage, statement) => {
    expect(isConnectionFailure(error)).toBe(outage);
    expect(isStatementError(error)).toBe(statement);
  });

  it('names the server once, however often an outage is classified', async () => {
    const target = parsePostgresUrl('postgres://postgres@127.0.0.1:1/test');
    const once = unavailable(target, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    expect(unavailable(target, once)).toBe(once);
    const error = await PostgresStore.open('postgres://postgres@127.0.0.1:1/test').then(
      () => null,
      (e: unknown) => e,
    );
    expect(isTasklatchError(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect((error as Error).message.match(/cannot connect to PostgreSQL/g)).toHaveLength(1);
  });
});

/** Text that does not compress: no index row of it fits. */
function randomText(length: number): string {
  let text = '';
  while (text.length < length) text += Math.random().toString(36).slice(2);
  return text.slice(0, length);
}
