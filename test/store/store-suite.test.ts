import { afterEach, describe, expect, it } from 'vitest';
import { requestDigest, resultDigest } from '../../src/core/digest.js';
import { isTasklatchError } from '../../src/core/errors.js';
import { isTerminal, type TaskStatus, type WireRequest } from '../../src/core/types.js';
import { TaskService } from '../../src/service/task-service.js';
import type { AdmitInput, TaskStore } from '../../src/store/types.js';
import { ALL_CAPS, HOUR, T0, record } from '../support/records.js';
import { ALL_HARNESSES } from '../support/stores.js';

const A = 'tenant-a/alice';
const B = 'tenant-b/bob';
const ok = { content: [{ type: 'text', text: 'done' }], isError: false };

function request(args: Record<string, unknown> = { month: '2026-06' }, key?: string): WireRequest {
  return { method: 'tools/call', params: { name: 'export_ledger', arguments: args, task: { ttl: HOUR }, ...(key ? { _meta: { 'io.tasklatch/idempotency-key': key } } : {}) } };
}

let seq = 0;
function admission(overrides: Partial<AdmitInput> = {}): AdmitInput {
  const req = overrides.request ?? request();
  return {
    taskId: `task-${++seq}`,
    authKey: A,
    toolName: 'export_ledger',
    request: req,
    requestDigest: requestDigest(req),
    idempotencyKey: null,
    ttl: HOUR,
    pollInterval: 500,
    correlationId: `corr-${seq}`,
    now: T0,
    ...overrides,
  };
}

describe.each(ALL_HARNESSES)('$name store', (harness) => {
  const open: TaskStore[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  async function fresh(label: string): Promise<TaskStore> {
    const store = await harness.open(label);
    open.push(store);
    return store;
  }

  describe('admit', () => {
    it('stores the admission record and audits it', async () => {
      const store = await fresh('admit');
      const input = admission({ idempotencyKey: 'k1' });
      const out = await store.admit(input);
      expect(out.decision).toBe('ACCEPT_TASK');
      expect(out.record).toMatchObject({
        taskId: input.taskId, authKey: A, toolName: 'export_ledger', status: 'working', version: 1,
        createdAt: T0, lastUpdatedAt: T0, ttl: HOUR, expiresAt: T0 + HOUR, pollInterval: 500,
        requestDigest: input.requestDigest, idempotencyKey: 'k1', request: input.request,
        cancelRequested: false, result: null, correlationId: input.correlationId,
      });
      expect((await store.get({ authKey: A, taskId: input.taskId, now: T0 })).record).toEqual(out.record);
      const trail = await store.auditTrail({ taskId: input.taskId });
      expect(trail).toMatchObject([{ surface: 'create', decision: 'ACCEPT_TASK', authKey: A, taskId: input.taskId, correlationId: input.correlationId }]);
    });

    it('replays the same key and request, blocks a different request, scopes keys by auth key', async () => {
      const store = await fresh('idem');
      const first = await store.admit(admission({ idempotencyKey: 'k' }));
      const again = await store.admit(admission({ idempotencyKey: 'k', now: T0 + 10 }));
      expect(again.decision).toBe('REPLAY_TASK');
      expect(again.record?.taskId).toBe(first.record?.taskId);
      const other = request({ month: '2026-05' });
      const collision = await store.admit(admission({ idempotencyKey: 'k', request: other, requestDigest: requestDigest(other) }));
      expect(collision).toEqual({ decision: 'BLOCK_IDEMPOTENCY_COLLISION', record: null });
      const bob = await store.admit(admission({ idempotencyKey: 'k', authKey: B }));
      expect(bob.decision).toBe('ACCEPT_TASK');
      expect(bob.record?.taskId).not.toBe(first.record?.taskId);
      expect((await store.list({ authKey: A, now: T0, after: null, limit: 10 })).records).toHaveLength(1);
    });

    it('lets an expired holder release its key', async () => {
      const store = await fresh('idem-expired');
      const first = await store.admit(admission({ idempotencyKey: 'k', ttl: 100 }));
      const later = T0 + 100;
      const other = request({ month: '1999-01' });
      const second = await store.admit(admission({ idempotencyKey: 'k', request: other, requestDigest: requestDigest(other), now: later }));
      expect(second.decision).toBe('ACCEPT_TASK');
      expect((await store.get({ authKey: A, taskId: first.record!.taskId, now: later })).decision).toBe('BLOCK_EXPIRED');
      const replay = await store.admit(admission({ idempotencyKey: 'k', request: other, requestDigest: requestDigest(other), now: later + 1 }));
      expect(replay.record?.taskId).toBe(second.record?.taskId);
    });

    it('admits without ttl as never expiring', async () => {
      const store = await fresh('nottl');
      const out = await store.admit(admission({ ttl: null }));
      expect(out.record).toMatchObject({ ttl: null, expiresAt: null });
      expect((await store.get({ authKey: A, taskId: out.record!.taskId, now: T0 + 1e12 })).decision).toBe('FOUND');
    });
  });

  describe('transition', () => {
    it('applies one conditional write: version + 1, lastUpdatedAt, result and digest', async () => {
      const store = await fresh('apply');
      await store.seed([record({ taskId: 't', version: 3 })]);
      const out = await store.transition({ taskId: 't', authKey: A, write: { status: 'completed', expectedVersion: 3, result: ok }, correlationId: 'c1', now: T0 });
      expect(out.decision).toBe('APPLY_TRANSITION');
      expect(out.record).toMatchObject({ status: 'completed', version: 4, lastUpdatedAt: T0, result: ok, resultDigest: resultDigest(ok) });
      expect((await store.get({ authKey: A, taskId: 't', now: T0 })).record).toEqual(out.record);
      const trail = await store.auditTrail({ taskId: 't' });
      expect(trail).toMatchObject([{ surface: 'transition', decision: 'APPLY_TRANSITION', status: 'completed', version: 4, correlationId: 'c1' }]);
    });

    it('updates a status message without leaving the status', async () => {
      const store = await fresh('message');
      await store.seed([record({ taskId: 't' })]);
      const out = await store.transition({ taskId: 't', authKey: A, write: { status: 'working', expectedVersion: 1, statusMessage: '40%' }, correlationId: 'c', now: T0 });
      expect(out.record).toMatchObject({ status: 'working', version: 2, statusMessage: '40%' });
    });

    it.each([
      { name: 'missing', seed: null, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'NOT_FOUND', visible: false },
      { name: 'other tenant', seed: {}, auth: B, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_AUTH', visible: false },
      { name: 'expired', seed: { expiresAt: T0 }, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_EXPIRED', visible: true },
      { name: 'illegal status', seed: {}, auth: A, write: { status: 'done', expectedVersion: 1 }, expect: 'BLOCK_ILLEGAL_TRANSITION', visible: true },
      { name: 'stale', seed: { version: 2 }, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_STALE_VERSION', visible: true },
      { name: 'terminal rewrite', seed: { status: 'cancelled' as TaskStatus }, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_TERMINAL_REWRITE', visible: true },
      { name: 'idempotent terminal', seed: { status: 'completed' as TaskStatus, result: ok, resultDigest: resultDigest(ok), version: 5 }, auth: A, write: { status: 'completed', expectedVersion: 2, result: ok }, expect: 'IDEMPOTENT_TERMINAL', visible: true },
    ])('classifies a write that changes nothing: $name', async (row) => {
      const store = await fresh('classify');
      if (row.seed !== null) await store.seed([record({ taskId: 't', ...row.seed })]);
      const before = (await store.get({ authKey: A, taskId: 't', now: T0 - 2 * HOUR })).record;
      const out = await store.transition({ taskId: 't', authKey: row.auth, write: row.write, correlationId: 'c', now: T0 });
      expect(out.decision).toBe(row.expect);
      expect(out.record === null).toBe(!row.visible);
      expect((await store.get({ authKey: A, taskId: 't', now: T0 - 2 * HOUR })).record).toEqual(before);
      expect((await store.auditTrail({ taskId: 't' })).map((e) => e.decision)).toEqual([row.expect]);
    });
  });

  describe('reads', () => {
    it('gets only the caller’s unexpired task and classifies the rest', async () => {
      const store = await fresh('get');
      await store.seed([record({ taskId: 't', expiresAt: T0 + 1 })]);
      expect((await store.get({ authKey: A, taskId: 't', now: T0 })).decision).toBe('FOUND');
      expect(await store.get({ authKey: B, taskId: 't', now: T0 })).toEqual({ decision: 'BLOCK_AUTH', record: null });
      expect(await store.get({ authKey: A, taskId: 't', now: T0 + 1 })).toEqual({ decision: 'BLOCK_EXPIRED', record: null });
      expect(await store.get({ authKey: A, taskId: 'nope', now: T0 })).toEqual({ decision: 'NOT_FOUND', record: null });
    });

    it('round-trips a seeded record exactly', async () => {
      const store = await fresh('roundtrip');
      const r = record({ taskId: 'round', status: 'failed', statusMessage: 'boom', result: { content: [], isError: true, n: 1.5 }, resultDigest: 'x', requestDigest: 'd', idempotencyKey: 'ik', request: { method: 'tools/call', params: { a: [1, 'ü'] } }, correlationId: 'cid', attempt: 2, leaseOwner: 'w', leaseExpiresAt: T0 + 5, cancelRequested: true, pollInterval: 250 });
      await store.seed([r]);
      expect((await store.get({ authKey: A, taskId: 'round', now: T0 })).record).toEqual(r);
    });

    it('cancels once, latching cancelled before it answers', async () => {
      const store = await fresh('cancel');
      await store.seed([record({ taskId: 't', version: 2, leaseOwner: 'w1', leaseExpiresAt: T0 + 1000 })]);
      expect(await store.cancel({ authKey: B, taskId: 't', now: T0, correlationId: 'c0' })).toEqual({ decision: 'BLOCK_AUTH', record: null });
      const out = await store.cancel({ authKey: A, taskId: 't', now: T0, correlationId: 'c1' });
      expect(out.decision).toBe('CANCEL_TASK');
      expect(out.record).toMatchObject({ status: 'cancelled', cancelRequested: true, version: 3, lastUpdatedAt: T0, leaseOwner: null });
      expect((await store.cancel({ authKey: A, taskId: 't', now: T0, correlationId: 'c2' })).decision).toBe('ALREADY_TERMINAL');
      const late = await store.transition({ taskId: 't', authKey: A, write: { status: 'completed', expectedVersion: 2, result: ok }, correlationId: 'c3', now: T0 });
      expect(late.decision).toBe('BLOCK_TERMINAL_REWRITE');
      expect((await store.get({ authKey: A, taskId: 't', now: T0 })).record?.status).toBe('cancelled');
      expect(await store.cancel({ authKey: A, taskId: 'nope', now: T0, correlationId: 'c4' })).toEqual({ decision: 'NOT_FOUND', record: null });
    });

    it('cancel of an expired task is BLOCK_EXPIRED and changes nothing', async () => {
      const store = await fresh('cancel-expired');
      await store.seed([record({ taskId: 't', expiresAt: T0 })]);
      expect((await store.cancel({ authKey: A, taskId: 't', now: T0, correlationId: 'c' })).decision).toBe('BLOCK_EXPIRED');
      expect((await store.get({ authKey: A, taskId: 't', now: T0 - 1 })).record?.status).toBe('working');
    });
  });

  describe('list', () => {
    it('pages the caller’s unexpired tasks in (createdAt, taskId) order', async () => {
      const store = await fresh('list');
      const mine = ['e', 'a', 'c', 'b', 'd', 'f', 'g'].map((id, i) => record({ taskId: id, createdAt: T0 - 1000 + (i % 3) }));
      await store.seed([
        ...mine,
        record({ taskId: 'bob', authKey: B }),
        record({ taskId: 'old', expiresAt: T0 }),
        record({ taskId: 'forever', expiresAt: null, createdAt: T0 + 5 }),
      ]);
      const ids: string[] = [];
      let after = null;
      for (;;) {
        const page = await store.list({ authKey: A, now: T0, after, limit: 3 });
        ids.push(...page.records.map((r) => r.taskId));
        const last = page.records.at(-1);
        if (!page.hasMore || last === undefined) break;
        after = { createdAt: last.createdAt, taskId: last.taskId };
      }
      expect(ids).toEqual(['b', 'e', 'g', 'a', 'd', 'c', 'f', 'forever']);
      expect((await store.list({ authKey: B, now: T0, after: null, limit: 3 })).records.map((r) => r.taskId)).toEqual(['bob']);
    });

    it('signs cursors for one auth key: a foreign or edited cursor is refused', async () => {
      const store = await fresh('cursor');
      await store.seed(['a', 'b', 'c'].map((id) => record({ taskId: id })).concat(['x', 'y'].map((id) => record({ taskId: id, authKey: B }))));
      const service = new TaskService({ store, capabilities: ALL_CAPS, clock: () => T0, limits: { pageSize: 1 } });
      const page = await service.list({ auth: A });
      expect(page.nextCursor).toEqual(expect.any(String));
      const next = await service.list({ auth: A, cursor: page.nextCursor! });
      expect(next.records?.map((r) => r.taskId)).toEqual(['b']);
      for (const bad of [page.nextCursor!.slice(0, -2) + 'AA', 'garbage', '', `${Buffer.from('[0,"a"]').toString('base64url')}.x`]) {
        await expect(service.list({ auth: A, cursor: bad })).rejects.toSatisfy((e) => isTasklatchError(e, 'INVALID_CURSOR'));
      }
      await expect(service.list({ auth: B, cursor: page.nextCursor! })).rejects.toSatisfy((e) => isTasklatchError(e, 'INVALID_CURSOR'));
    });
  });

  describe('expiry', () => {
    it('sweeps expired records in bounded batches and keeps the audit trail', async () => {
      const store = await fresh('sweep');
      const expired = Array.from({ length: 25 }, (_, i) => record({ taskId: `x${i}`, expiresAt: T0 - i }));
      await store.seed([...expired, record({ taskId: 'live' }), record({ taskId: 'forever', expiresAt: null })]);
      await store.recordDecision({ at: T0, surface: 'read', decision: 'RETURN_STATUS', authKey: A, taskId: 'x3', correlationId: 'c' });
      const batches = [];
      for (let i = 0; i < 4; i++) batches.push(await store.sweepExpired({ now: T0, limit: 10 }));
      expect(batches).toEqual([10, 10, 5, 0]);
      expect((await store.get({ authKey: A, taskId: 'live', now: T0 })).decision).toBe('FOUND');
      expect((await store.get({ authKey: A, taskId: 'forever', now: T0 })).decision).toBe('FOUND');
      expect((await store.get({ authKey: A, taskId: 'x3', now: T0 - 100 })).decision).toBe('NOT_FOUND');
      expect(await store.auditTrail({ taskId: 'x3' })).toHaveLength(1);
    });
  });

  describe('secret', () => {
    it('is stable and at least 32 bytes', async () => {
      const store = await fresh('secret');
      const a = await store.sharedSecret();
      expect(a.length).toBeGreaterThanOrEqual(32);
      expect(Buffer.from(await store.sharedSecret()).equals(Buffer.from(a))).toBe(true);
    });
  });

  describe('dispatch', () => {
    const abandoned = { content: [{ type: 'text', text: 'abandoned' }], isError: true };
    const claimIn = (store: TaskStore, owner: string, now: number, extra: { limit?: number; leaseMs?: number; maxAttempts?: number } = {}) =>
      store.claim({ owner, now, leaseMs: extra.leaseMs ?? 1000, limit: extra.limit ?? 10, maxAttempts: extra.maxAttempts ?? 5, abandonedResult: abandoned, correlationId: `claim-${owner}` });
    const fenceOf = (r: { taskId: string; authKey: string; leaseOwner: string | null; version: number }) => ({ taskId: r.taskId, authKey: r.authKey, owner: r.leaseOwner!, version: r.version });

    it('claims an admitted task once, bumping the version and counting the attempt', async () => {
      const store = await fresh('claim');
      const admitted = (await store.admit(admission())).record!;
      expect(await store.pendingDispatch({ now: T0 })).toBe(1);
      const [claimed, ...rest] = await claimIn(store, 'w1', T0 + 5);
      expect(rest).toEqual([]);
      expect(claimed).toMatchObject({ taskId: admitted.taskId, status: 'working', version: 2, attempt: 1, leaseOwner: 'w1', leaseExpiresAt: T0 + 1005, lastUpdatedAt: T0 + 5 });
      expect(await claimIn(store, 'w2', T0 + 6)).toEqual([]);
      const trail = await store.auditTrail({ taskId: admitted.taskId });
      expect(trail.map((e) => e.decision)).toEqual(['ACCEPT_TASK', 'APPLY_TRANSITION']);
      expect(trail[1]).toMatchObject({ surface: 'transition', status: 'working', version: 2 });
    });

    it('lets another worker take over an expired lease and fences the first one off', async () => {
      const store = await fresh('takeover');
      await store.admit(admission());
      const [first] = await claimIn(store, 'w1', T0);
      expect(await store.heartbeat({ fence: fenceOf(first!), now: T0 + 500, leaseMs: 1000 })).toBe(true);
      expect(await claimIn(store, 'w2', T0 + 1400)).toEqual([]);
      const [second] = await claimIn(store, 'w2', T0 + 1500);
      expect(second).toMatchObject({ version: 3, attempt: 2, leaseOwner: 'w2' });
      expect(await store.heartbeat({ fence: fenceOf(first!), now: T0 + 1501, leaseMs: 1000 })).toBe(false);
      const stale = await store.transition({ taskId: first!.taskId, authKey: A, write: { status: 'completed', expectedVersion: first!.version, result: ok }, correlationId: 'w1', now: T0 + 1502 });
      expect(stale.decision).toBe('BLOCK_STALE_VERSION');
      const won = await store.transition({ taskId: first!.taskId, authKey: A, write: { status: 'completed', expectedVersion: second!.version, result: ok }, correlationId: 'w2', now: T0 + 1503 });
      expect(won.decision).toBe('APPLY_TRANSITION');
      expect(won.record).toMatchObject({ leaseOwner: null, leaseExpiresAt: null });
      expect(await store.pendingDispatch({ now: T0 + 1504 })).toBe(0);
      expect(await claimIn(store, 'w3', T0 + 99_999)).toEqual([]);
    });

    it('releases a lease for an immediate claim by another worker', async () => {
      const store = await fresh('release');
      await store.admit(admission());
      const [held] = await claimIn(store, 'w1', T0, { leaseMs: 60_000 });
      expect(await store.release({ fence: { ...fenceOf(held!), owner: 'someone-else' }, now: T0 + 1 })).toBe(false);
      expect(await store.release({ fence: fenceOf(held!), now: T0 + 1 })).toBe(true);
      expect(await claimIn(store, 'w2', T0 + 2)).toMatchObject([{ leaseOwner: 'w2', attempt: 2 }]);
    });

    it('never claims a cancelled, finished or expired task and closes its entry', async () => {
      const store = await fresh('skip');
      const cancelled = (await store.admit(admission())).record!;
      const expired = (await store.admit(admission({ ttl: 10 }))).record!;
      const [running] = await claimIn(store, 'w1', T0);
      expect(running?.taskId).toBe(cancelled.taskId);
      await store.cancel({ authKey: A, taskId: cancelled.taskId, now: T0 + 1, correlationId: 'c' });
      expect(await store.heartbeat({ fence: fenceOf(running!), now: T0 + 2, leaseMs: 1000 })).toBe(false);
      expect(await claimIn(store, 'w2', T0 + 5000)).toEqual([]);
      expect(await store.pendingDispatch({ now: T0 + 5000 })).toBe(0);
      expect((await store.get({ authKey: A, taskId: expired.taskId, now: T0 })).record?.attempt).toBe(1);
    });

    it('ends a task failed once it used up its attempts', async () => {
      const store = await fresh('attempts');
      const admitted = (await store.admit(admission())).record!;
      await claimIn(store, 'w1', T0, { maxAttempts: 2 });
      await claimIn(store, 'w2', T0 + 2000, { maxAttempts: 2 });
      expect(await claimIn(store, 'w3', T0 + 4000, { maxAttempts: 2 })).toEqual([]);
      const stored = (await store.get({ authKey: A, taskId: admitted.taskId, now: T0 + 4000 })).record!;
      expect(stored).toMatchObject({ status: 'failed', attempt: 2, version: 4, result: abandoned, leaseOwner: null });
      expect(await store.pendingDispatch({ now: T0 + 4000 })).toBe(0);
    });

    it('claims at most `limit`, oldest first, and concurrent claimers never share a task', async () => {
      const store = await fresh('claim-many');
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await store.admit(admission({ now: T0 + i }))).record!.taskId);
      const firstTwo = await claimIn(store, 'w0', T0 + 100, { limit: 2 });
      expect(firstTwo.map((r) => r.taskId)).toEqual(ids.slice(0, 2));
      const batches = await Promise.all(Array.from({ length: 8 }, (_, i) => claimIn(store, `w${i + 1}`, T0 + 100, { limit: 3 })));
      const claimed = batches.flat().map((r) => r.taskId);
      expect(new Set(claimed).size).toBe(claimed.length);
      expect(claimed.sort()).toEqual(ids.slice(2).sort());
    });
  });

  describe('active-task limit', () => {
    it('refuses a new task at the limit, still replays an existing one, and counts only live tasks', async () => {
      const store = await fresh('limit');
      const a = await store.admit(admission({ maxActive: 2, idempotencyKey: 'k1' }));
      await store.admit(admission({ maxActive: 2 }));
      expect(await store.admit(admission({ maxActive: 2 }))).toEqual({ decision: 'BLOCK_TASK_LIMIT', record: null });
      const replay = await store.admit(admission({ maxActive: 2, idempotencyKey: 'k1' }));
      expect(replay.record?.taskId).toBe(a.record?.taskId);
      expect((await store.admit(admission({ maxActive: 2, authKey: B }))).decision).toBe('ACCEPT_TASK');
      await store.transition({ taskId: a.record!.taskId, authKey: A, write: { status: 'completed', expectedVersion: 1 }, correlationId: 'c', now: T0 });
      expect((await store.admit(admission({ maxActive: 2 }))).decision).toBe('ACCEPT_TASK');
      expect((await store.admit(admission({ maxActive: 2, now: T0 + HOUR }))).decision).toBe('ACCEPT_TASK');
    });

    it('holds under concurrent admissions', async () => {
      const store = await fresh('limit-race');
      const outs = await Promise.all(Array.from({ length: 24 }, () => store.admit(admission({ maxActive: 5 }))));
      expect(outs.filter((o) => o.decision === 'ACCEPT_TASK')).toHaveLength(5);
      expect(outs.filter((o) => o.decision === 'BLOCK_TASK_LIMIT')).toHaveLength(19);
    });
  });

  describe('races', () => {
    it('64 concurrent admits of one key give one task', async () => {
      const store = await fresh('race-admit');
      const outs = await Promise.all(Array.from({ length: 64 }, () => store.admit(admission({ idempotencyKey: 'same' }))));
      const accepted = outs.filter((o) => o.decision === 'ACCEPT_TASK');
      expect(accepted).toHaveLength(1);
      expect(outs.filter((o) => o.decision === 'REPLAY_TASK').every((o) => o.record?.taskId === accepted[0]!.record!.taskId)).toBe(true);
      expect(outs.filter((o) => o.decision === 'REPLAY_TASK')).toHaveLength(63);
      const digests = await Promise.all(
        Array.from({ length: 64 }, (_, i) => {
          const req = request({ month: `m${i}` });
          return store.admit(admission({ idempotencyKey: 'other', request: req, requestDigest: requestDigest(req) }));
        }),
      );
      expect(digests.filter((o) => o.decision === 'ACCEPT_TASK')).toHaveLength(1);
      expect(digests.filter((o) => o.decision === 'BLOCK_IDEMPOTENCY_COLLISION')).toHaveLength(63);
      expect((await store.list({ authKey: A, now: T0, after: null, limit: 500 })).records).toHaveLength(2);
    });

    it('concurrent terminal writers on one task: exactly one applies', async () => {
      const store = await fresh('race-terminal');
      const trials = 50;
      await store.seed(Array.from({ length: trials }, (_, i) => record({ taskId: `r${i}`, version: 2 })));
      const counts: Record<string, number> = {};
      for (let i = 0; i < trials; i++) {
        const writers = 16 + ((i * 7) % 49);
        const outs = await Promise.all(
          Array.from({ length: writers }, (_, w) => {
            if (w % 11 === 5) return store.cancel({ authKey: A, taskId: `r${i}`, now: T0, correlationId: `c${w}` });
            const status = (['completed', 'failed', 'cancelled'] as const)[w % 3]!;
            return store.transition({ taskId: `r${i}`, authKey: A, write: { status, expectedVersion: w % 5 === 0 ? 1 : 2, result: { w } }, correlationId: `c${w}`, now: T0 });
          }),
        );
        for (const o of outs) counts[o.decision] = (counts[o.decision] ?? 0) + 1;
        expect(outs.filter((o) => o.decision === 'APPLY_TRANSITION' || o.decision === 'CANCEL_TASK')).toHaveLength(1);
        const stored = (await store.get({ authKey: A, taskId: `r${i}`, now: T0 })).record!;
        expect(isTerminal(stored.status)).toBe(true);
        expect(stored.version).toBe(3);
        const applied = (await store.auditTrail({ taskId: `r${i}` })).filter((e) => e.decision === 'APPLY_TRANSITION' || e.decision === 'CANCEL_TASK');
        expect(applied).toHaveLength(1);
      }
      expect(Object.keys(counts).sort()).toEqual(
        expect.arrayContaining(['ALREADY_TERMINAL', 'BLOCK_STALE_VERSION', 'BLOCK_TERMINAL_REWRITE']),
      );
    });
  });
});
