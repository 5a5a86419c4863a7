import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TASK_STATUSES, type TaskRecord } from '../../src/core/types.js';
import { TaskService } from '../../src/service/task-service.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { ALL_CAPS, T0 } from '../support/records.js';

const ALICE = 'acme/alice';
const BOB = 'acme/bob';
const TOOL = { name: 't', execution: { taskSupport: 'required' as const } };

/**
 * A memory store that says it sends change notifications, and sends the ones the test delivers:
 * the coherence protocol of a shared store, with the delivery delay in the test's hands. Writes
 * of a second service on the inner store are "another process".
 */
function notifyingStore(inner: MemoryStore) {
  let onChange: ((taskId: string | null, version?: number) => void) | null = null;
  let onError: ((error: Error) => void) | null = null;
  const gets: string[] = [];
  const store = new Proxy(inner, {
    get(target, key) {
      if (key === 'supports') return { ...target.supports, listenNotify: true, shared: true };
      if (key === 'listen')
        return async (change: typeof onChange, error?: typeof onError) => {
          onChange = change;
          onError = error ?? null;
          return async () => undefined;
        };
      if (key === 'get') return async (input: { taskId: string }) => (gets.push(input.taskId), target.get(input as never));
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as unknown as TaskStore;
  return {
    store,
    gets,
    deliver: (taskId: string | null, version?: number) => onChange?.(taskId, version),
    lose: () => onError?.(new Error('listener connection lost')),
  };
}

async function setup(options: { readCache?: boolean | { maxAgeMs: number } } = {}) {
  let now = T0;
  const clock = () => now;
  const inner = new MemoryStore();
  const wire = notifyingStore(inner);
  const local = new TaskService({ store: wire.store, capabilities: ALL_CAPS, clock, ...options });
  await local.start();
  const remote = new TaskService({ store: inner, capabilities: ALL_CAPS, clock });
  const truth = new TaskService({ store: inner, capabilities: ALL_CAPS, clock, readCache: false });
  const create = async (service: TaskService, auth: string, ttl = 60_000) => {
    const out = await service.create({ auth, tool: TOOL, request: { method: 'tools/call', params: { name: 't', arguments: {}, task: { ttl } } } });
    return out.record!;
  };
  return { ...wire, local, remote, truth, create, advance: (ms: number) => (now += ms) };
}

const get = (service: TaskService, auth: string, taskId: string) => service.read({ auth, method: 'tasks/get', taskId });

describe('the tasks/get record cache', () => {
  it('answers the owner from memory, every read with its audit line', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    for (let i = 0; i < 3; i++) expect((await get(s.local, ALICE, task.taskId)).record?.version).toBe(task.version);
    expect(s.gets).toEqual([]);
    const reads = (await s.truth.store.auditTrail({ taskId: task.taskId })).filter((e) => e.surface === 'read');
    // Counted, not appended: one row of three reads.
    expect(reads.map((e) => [e.decision, e.count])).toEqual([['RETURN_STATUS', 3]]);
  });

  it('never answers another caller: the store decides, and foreign stays missing', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    expect(s.local.cache?.size).toBe(1);
    const foreign = await get(s.local, BOB, task.taskId);
    expect(foreign).toEqual({ decision: 'BLOCK_AUTH', record: null });
    expect(s.gets).toEqual([task.taskId]);
  });

  it('never answers after expiry, by the stores’ own rule (expiresAt <= now)', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE, 1000);
    s.advance(999);
    expect((await get(s.local, ALICE, task.taskId)).decision).toBe('RETURN_STATUS');
    s.advance(1);
    expect(await get(s.local, ALICE, task.taskId)).toEqual({ decision: 'BLOCK_EXPIRED', record: null });
    expect(s.gets).toEqual([task.taskId]);
  });

  it('trusts an entry for maxAgeMs at most: a change whose notification never came is read then', async () => {
    const s = await setup({ readCache: { maxAgeMs: 30 } });
    const task = await s.create(s.local, ALICE);
    // Another process commits and dies before it notifies.
    await s.remote.transition({ auth: ALICE, taskId: task.taskId, write: { status: 'completed', expectedVersion: 1, result: { content: [] } } });
    expect((await get(s.local, ALICE, task.taskId)).record?.status).toBe('working');
    await new Promise((r) => setTimeout(r, 40));
    expect((await get(s.local, ALICE, task.taskId)).record?.status).toBe('completed');
    expect(s.gets).toEqual([task.taskId]);
  });

  it('is evicted by another process’s change once its notification arrives', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    const done = await s.remote.transition({ auth: ALICE, taskId: task.taskId, write: { status: 'completed', expectedVersion: 1, result: { content: [] } } });
    // Until the notification comes, the read trails the other process's commit.
    expect((await get(s.local, ALICE, task.taskId)).record?.status).toBe('working');
    s.deliver(task.taskId, done.record!.version);
    expect((await get(s.local, ALICE, task.taskId)).record?.status).toBe('completed');
  });

  it('is not used, and forgets, while notifications are down, and after stop', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    s.lose();
    expect(s.local.notifications).toBe('down');
    await s.remote.transition({ auth: ALICE, taskId: task.taskId, write: { status: 'completed', expectedVersion: 1, result: { content: [] } } });
    expect((await get(s.local, ALICE, task.taskId)).record?.status).toBe('completed');
    expect(s.local.cache?.size).toBe(0);
    // Back up: everything may have changed meanwhile, so nothing known before is kept.
    s.deliver(null);
    expect(s.local.notifications).toBe('up');
    await get(s.local, ALICE, task.taskId);
    expect(s.local.cache?.size).toBe(1);
    await s.local.stop();
    expect(s.local.cache?.size).toBe(0);
    await get(s.local, ALICE, task.taskId);
    expect(s.local.cache?.size).toBe(0);
  });

  it('is never used on a store without notifications, nor when turned off', async () => {
    const store = new MemoryStore();
    const service = new TaskService({ store, capabilities: ALL_CAPS });
    await service.start();
    const out = await service.create({ auth: ALICE, tool: TOOL, request: { method: 'tools/call', params: { name: 't', arguments: {}, task: {} } } });
    await get(service, ALICE, out.record!.taskId);
    expect(service.cache?.size).toBe(0);
    const off = await setup({ readCache: false });
    const task = await off.create(off.local, ALICE);
    await get(off.local, ALICE, task.taskId);
    expect(off.local.cache).toBeNull();
    expect(off.gets).toEqual([task.taskId]);
  });

  it.each([
    ['with its version', true],
    ['without a version', false],
  ])('does not keep a store read that a change overtook while it ran (a notification %s)', async (_name, versioned) => {
    const s = await setup();
    const task = await s.remote.create({ auth: ALICE, tool: TOOL, request: { method: 'tools/call', params: { name: 't', arguments: {}, task: {} } } });
    const taskId = task.record!.taskId;
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The read takes its snapshot, then another process commits and notifies before the read returns.
    const reading = s.local.cache!.get({ authKey: ALICE, taskId, now: T0 }, async () => {
      const found = await s.truth.lookup({ auth: ALICE, taskId });
      await gate;
      return found;
    });
    const done = await s.remote.transition({ auth: ALICE, taskId, write: { status: 'completed', expectedVersion: 1, result: { content: [] } } });
    s.deliver(taskId, versioned ? done.record!.version : undefined);
    release();
    expect((await reading).record?.status).toBe('working');
    expect((await get(s.local, ALICE, taskId)).record?.status).toBe('completed');
  });

  it('keeps no record of this process older than a version another process already announced', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    const cache = s.local.cache!;
    cache.changed(task.taskId, 5, true);
    cache.written({ ...task, version: 4 });
    expect(cache.size).toBe(0);
    cache.written({ ...task, version: 5 });
    expect(cache.size).toBe(1);
  });
});

describe('a held tasks/result', () => {
  it('decides from the record of this process’s own write, without reading the store again', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    const waiting = s.local.awaitResult({ auth: ALICE, taskId: task.taskId });
    await new Promise((r) => setTimeout(r, 5));
    let version = task.version;
    for (let i = 0; i < 3; i++) {
      version = (await s.local.transition({ auth: ALICE, taskId: task.taskId, write: { status: 'working', expectedVersion: version, statusMessage: `${i}` } }))
        .record!.version;
      await new Promise((r) => setTimeout(r, 2));
    }
    await s.local.transition({ auth: ALICE, taskId: task.taskId, write: { status: 'completed', expectedVersion: version, result: { content: [] } } });
    const out = await waiting;
    expect(out.decision).toBe('RETURN_RESULT');
    expect(out.record?.version).toBe(version + 1);
    // The first decision came from the cache (the admission this process wrote); every wake
    // after it decided from the written record: the store was never read.
    expect(s.gets).toEqual([]);
    const reads = (await s.truth.store.auditTrail({ taskId: task.taskId })).filter((e) => e.surface === 'read').map((e) => e.decision);
    expect(reads).toEqual(['WAIT_TERMINAL', 'RETURN_RESULT']);
  });

  it('reads the store when another process’s change woke it', async () => {
    const s = await setup();
    const task = await s.create(s.local, ALICE);
    const waiting = s.local.awaitResult({ auth: ALICE, taskId: task.taskId });
    await new Promise((r) => setTimeout(r, 5));
    const done = await s.remote.transition({ auth: ALICE, taskId: task.taskId, write: { status: 'completed', expectedVersion: 1, result: { content: [] } } });
    s.deliver(task.taskId, done.record!.version);
    expect((await waiting).decision).toBe('RETURN_RESULT');
    // The first decision from the cache; the remote change evicted the entry, and the wake read the store.
    expect(s.gets).toEqual([task.taskId]);
  });
});

/** What a read answers, without the lease fields a heartbeat may have moved (no answer shows them). */
function answer(out: { decision: string; record: TaskRecord | null }) {
  if (out.record === null) return { decision: out.decision };
  const { leaseExpiresAt: _l, ...rest } = out.record;
  return { decision: out.decision, record: rest };
}

type Op =
  | { kind: 'write'; by: 'local' | 'remote'; task: number; status: string; stale: boolean }
  | { kind: 'cancel'; by: 'local' | 'remote'; task: number }
  | { kind: 'deliver' }
  | { kind: 'lose' }
  | { kind: 'reconnect' }
  | { kind: 'advance'; ms: number }
  | { kind: 'read'; task: number; auth: string };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('write' as const),
    by: fc.constantFrom('local' as const, 'remote' as const),
    task: fc.nat(3),
    status: fc.constantFrom(...TASK_STATUSES),
    stale: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('cancel' as const), by: fc.constantFrom('local' as const, 'remote' as const), task: fc.nat(3) }),
  fc.record({ kind: fc.constant('deliver' as const) }),
  fc.record({ kind: fc.constant('lose' as const) }),
  fc.record({ kind: fc.constant('reconnect' as const) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
  { arbitrary: fc.record({ kind: fc.constant('read' as const), task: fc.nat(3), auth: fc.constantFrom(ALICE, BOB) }), weight: 4 },
);

describe('reads through the cache (property)', () => {
  it('decide as reads straight from the store, once every notification has arrived', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), async (ops) => {
        const s = await setup();
        const tasks: string[] = [];
        for (let i = 0; i < 4; i++) tasks.push((await s.create(i % 2 === 0 ? s.local : s.remote, i < 3 ? ALICE : BOB, 30_000 + i * 10_000)).taskId);
        // Notifications of the other process's writes, in commit order, not yet delivered.
        const pending: Array<{ taskId: string; version: number }> = [];
        for (const op of ops) {
          if (op.kind === 'write' || op.kind === 'cancel') {
            const taskId = tasks[op.task]!;
            const service = op.by === 'local' ? s.local : s.remote;
            const current = await s.truth.lookup({ auth: ALICE, taskId });
            const version = current.record?.version ?? 1;
            const out =
              op.kind === 'cancel'
                ? await service.read({ auth: ALICE, method: 'tasks/cancel', taskId })
                : await service.transition({
                    auth: ALICE,
                    taskId,
                    write: { status: op.status, expectedVersion: op.stale ? version - 1 : version, result: { content: [] } },
                  });
            if (op.by === 'remote' && out.record !== null && (out.decision === 'APPLY_TRANSITION' || out.decision === 'CANCEL_TASK'))
              pending.push({ taskId, version: out.record.version });
          } else if (op.kind === 'deliver') {
            const next = pending.shift();
            if (next !== undefined) s.deliver(next.taskId, next.version);
          } else if (op.kind === 'lose') s.lose();
          else if (op.kind === 'reconnect') {
            // A listener back after a loss reports that anything may have changed.
            pending.length = 0;
            s.deliver(null);
          } else if (op.kind === 'advance') s.advance(op.ms);
          else {
            const taskId = tasks[op.task]!;
            const cached = await get(s.local, op.auth, taskId);
            const stored = await get(s.truth, op.auth, taskId);
            // Never another caller's record, never an expired one, whatever is in flight.
            if (cached.record !== null) expect(cached.record.authKey).toBe(op.auth);
            if (stored.record === null) expect(cached.record).toBeNull();
            if (!pending.some((p) => p.taskId === taskId)) expect(answer(cached)).toEqual(answer(stored));
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
