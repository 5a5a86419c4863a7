import { expect, it, describe } from 'vitest';
import { requestDigest, resultDigest } from '../../../src/core/digest.js';
import { isTasklatchError } from '../../../src/core/errors.js';
import type { TaskStatus } from '../../../src/core/types.js';
import { openGuard } from '../../../src/service/guard.js';
import { ALL_CAPS, HOUR, T0, record } from '../../support/records.js';
import { A, B, admission, defineStoreSuite, ok, request } from './store-suite.js';

// Records: admission, guarded writes, reads, listing, expiry and the shared secret.

defineStoreSuite('records', ({ fresh }) => {
  describe('visibleTaskIds', () => {
    it("names exactly the caller's unexpired tasks among the ids, each once, in one read", async () => {
      const store = await fresh('visible-ids');
      const mine = await store.admit(admission());
      const mineToo = await store.admit(admission());
      const shortLived = await store.admit(admission({ ttl: 1000 }));
      const theirs = await store.admit(admission({ authKey: B }));
      const ids = [
        mine.record!.taskId,
        theirs.record!.taskId,
        'unknown',
        mineToo.record!.taskId,
        mine.record!.taskId,
        shortLived.record!.taskId,
        "x' OR '1'='1",
      ];
      expect((await store.visibleTaskIds({ authKey: A, taskIds: ids, now: T0 })).sort()).toEqual(
        [mine.record!.taskId, mineToo.record!.taskId, shortLived.record!.taskId].sort(),
      );
      expect((await store.visibleTaskIds({ authKey: A, taskIds: ids, now: T0 + 1000 })).sort()).toEqual([mine.record!.taskId, mineToo.record!.taskId].sort());
      expect(await store.visibleTaskIds({ authKey: B, taskIds: ids, now: T0 })).toEqual([theirs.record!.taskId]);
      expect(await store.visibleTaskIds({ authKey: A, taskIds: [], now: T0 })).toEqual([]);
      // A thousand ids are one call, whatever the store.
      const many = [...Array.from({ length: 1000 }, (_, i) => `absent-${i}`), mine.record!.taskId];
      expect(await store.visibleTaskIds({ authKey: A, taskIds: many, now: T0 })).toEqual([mine.record!.taskId]);
    });
  });

  describe('admit', () => {
    it('stores the admission record and audits it', async () => {
      const store = await fresh('admit');
      const input = admission({ idempotencyKey: 'k1' });
      const out = await store.admit(input);
      expect(out.decision).toBe('ACCEPT_TASK');
      expect(out.record).toMatchObject({
        taskId: input.taskId,
        authKey: A,
        toolName: 'export_ledger',
        status: 'working',
        version: 1,
        createdAt: T0,
        lastUpdatedAt: T0,
        ttl: HOUR,
        expiresAt: T0 + HOUR,
        pollInterval: 500,
        requestDigest: input.requestDigest,
        idempotencyKey: 'k1',
        request: input.request,
        cancelRequested: false,
        result: null,
        correlationId: input.correlationId,
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
      const out = await store.transition({
        taskId: 't',
        authKey: A,
        write: { status: 'completed', expectedVersion: 3, result: ok },
        correlationId: 'c1',
        now: T0,
      });
      expect(out.decision).toBe('APPLY_TRANSITION');
      expect(out.record).toMatchObject({ status: 'completed', version: 4, lastUpdatedAt: T0, result: ok, resultDigest: resultDigest(ok) });
      expect((await store.get({ authKey: A, taskId: 't', now: T0 })).record).toEqual(out.record);
      const trail = await store.auditTrail({ taskId: 't' });
      expect(trail).toMatchObject([{ surface: 'transition', decision: 'APPLY_TRANSITION', status: 'completed', version: 4, correlationId: 'c1' }]);
    });

    it('updates a status message without leaving the status', async () => {
      const store = await fresh('message');
      await store.seed([record({ taskId: 't' })]);
      const out = await store.transition({
        taskId: 't',
        authKey: A,
        write: { status: 'working', expectedVersion: 1, statusMessage: '40%' },
        correlationId: 'c',
        now: T0,
      });
      expect(out.record).toMatchObject({ status: 'working', version: 2, statusMessage: '40%' });
    });

    it.each([
      { name: 'missing', seed: null, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'NOT_FOUND', visible: false },
      { name: 'other tenant', seed: {}, auth: B, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_AUTH', visible: false },
      { name: 'expired', seed: { expiresAt: T0 }, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_EXPIRED', visible: true },
      { name: 'illegal status', seed: {}, auth: A, write: { status: 'done', expectedVersion: 1 }, expect: 'BLOCK_ILLEGAL_TRANSITION', visible: true },
      { name: 'stale', seed: { version: 2 }, auth: A, write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_STALE_VERSION', visible: true },
      {
        name: 'terminal rewrite',
        seed: { status: 'cancelled' as TaskStatus },
        auth: A,
        write: { status: 'completed', expectedVersion: 1 },
        expect: 'BLOCK_TERMINAL_REWRITE',
        visible: true,
      },
      {
        name: 'idempotent terminal',
        seed: { status: 'completed' as TaskStatus, result: ok, resultDigest: resultDigest(ok), version: 5 },
        auth: A,
        write: { status: 'completed', expectedVersion: 2, result: ok },
        expect: 'IDEMPOTENT_TERMINAL',
        visible: true,
      },
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
      const r = record({
        taskId: 'round',
        status: 'failed',
        statusMessage: 'boom',
        result: { content: [], isError: true, n: 1.5 },
        resultDigest: 'x',
        requestDigest: 'd',
        idempotencyKey: 'ik',
        request: { method: 'tools/call', params: { a: [1, 'ü'] } },
        correlationId: 'cid',
        attempt: 2,
        leaseOwner: 'w',
        leaseExpiresAt: T0 + 5,
        cancelRequested: true,
        pollInterval: 250,
      });
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
      const late = await store.transition({
        taskId: 't',
        authKey: A,
        write: { status: 'completed', expectedVersion: 2, result: ok },
        correlationId: 'c3',
        now: T0,
      });
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

    it('shows each task by the fields a listing shows, as stored, and no payload', async () => {
      const store = await fresh('list-fields');
      const stored = [
        record({
          taskId: 'done',
          status: 'completed',
          version: 4,
          statusMessage: 'exported 12 rows',
          ttl: 60_000,
          pollInterval: 2500,
          result: { content: [] },
        }),
        record({ taskId: 'open', createdAt: T0 - 500, lastUpdatedAt: T0 - 100, ttl: null, expiresAt: null, pollInterval: null, statusMessage: null }),
      ];
      await store.seed(stored);
      const page = await store.list({ authKey: A, now: T0, after: null, limit: 10 });
      const fields = ['taskId', 'status', 'statusMessage', 'version', 'createdAt', 'lastUpdatedAt', 'ttl', 'pollInterval'] as const;
      expect(page.records.map((r) => r.taskId)).toEqual(['done', 'open']);
      for (const [i, listed] of page.records.entries()) {
        // Exactly the listed fields, each equal to the stored record's as a read answers it.
        expect(Object.keys(listed).sort()).toEqual([...fields].sort());
        const read = (await store.get({ authKey: A, taskId: listed.taskId, now: T0 })).record!;
        expect(listed).toEqual(Object.fromEntries(fields.map((f) => [f, read[f]])));
        expect(listed.status).toBe(stored[i]!.status);
      }
    });

    it('signs cursors for one auth key: a foreign or edited cursor is refused', async () => {
      const store = await fresh('cursor');
      await store.seed(['a', 'b', 'c'].map((id) => record({ taskId: id })).concat(['x', 'y'].map((id) => record({ taskId: id, authKey: B }))));
      const guard = openGuard({ store, capabilities: ALL_CAPS, clock: () => T0, limits: { pageSize: 1 } });
      const page = await guard.requestor.list({ auth: A });
      expect(page.nextCursor).toEqual(expect.any(String));
      const next = await guard.requestor.list({ auth: A, cursor: page.nextCursor! });
      expect(next.records?.map((r) => r.taskId)).toEqual(['b']);
      for (const bad of [page.nextCursor!.slice(0, -2) + 'AA', 'garbage', '', `${Buffer.from('[0,"a"]').toString('base64url')}.x`]) {
        await expect(guard.requestor.list({ auth: A, cursor: bad })).rejects.toSatisfy((e) => isTasklatchError(e, 'INVALID_CURSOR'));
      }
      await expect(guard.requestor.list({ auth: B, cursor: page.nextCursor! })).rejects.toSatisfy((e) => isTasklatchError(e, 'INVALID_CURSOR'));
    });
  });

  describe('expiry', () => {
    it('sweeps expired records in bounded batches, with their audit trails (retention 0)', async () => {
      const store = await fresh('sweep');
      const expired = Array.from({ length: 25 }, (_, i) => record({ taskId: `x${i}`, expiresAt: T0 - i }));
      await store.seed([...expired, record({ taskId: 'live' }), record({ taskId: 'forever', expiresAt: null })]);
      await store.recordDecision({ at: T0, surface: 'read', decision: 'RETURN_STATUS', authKey: A, taskId: 'x3', correlationId: 'c' });
      const batches = [];
      for (let i = 0; i < 4; i++) batches.push(await store.sweepExpired({ now: T0, limit: 10, retentionMs: 0 }));
      expect(batches.map((b) => [b.tasks, b.more])).toEqual([
        [10, true],
        [10, true],
        [5, false],
        [0, false],
      ]);
      expect(batches.reduce((n, b) => n + b.auditRows, 0)).toBe(1);
      expect((await store.get({ authKey: A, taskId: 'live', now: T0 })).decision).toBe('FOUND');
      expect((await store.get({ authKey: A, taskId: 'forever', now: T0 })).decision).toBe('FOUND');
      expect((await store.get({ authKey: A, taskId: 'x3', now: T0 - 100 })).decision).toBe('NOT_FOUND');
      expect(await store.auditTrail({ taskId: 'x3' })).toEqual([]);
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
});
