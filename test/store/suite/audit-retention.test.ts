import { describe, expect, it } from 'vitest';
import { openGuard, type Guard } from '../../../src/service/guard.js';
import { READ_AUDIT_WINDOW_MS } from '../../../src/store/read-audit.js';
import type { TaskStore } from '../../../src/store/types.js';
import { ALL_CAPS, HOUR, T0, record } from '../../support/records.js';
import { A, B, admission, defineStoreSuite, ok } from './store-suite.js';

// The aggregated read audit (one row per task, caller, decision and hour) and retention.

const DAY = 24 * HOUR;
/** Half past an hour: an hour of polling from here spans two windows. */
const HALF_PAST = Math.floor(T0 / READ_AUDIT_WINDOW_MS) * READ_AUDIT_WINDOW_MS + READ_AUDIT_WINDOW_MS / 2;

function guardAt(store: TaskStore, clock: { now: number }): Guard {
  return openGuard({ store, capabilities: ALL_CAPS, clock: () => clock.now });
}

defineStoreSuite('audit and retention', ({ fresh }) => {
  describe('aggregated read audit', () => {
    it('3,600 polls over an hour add a handful of rows, with the counts, first and last', async () => {
      const store = await fresh('poll-hour');
      await store.seed([record({ taskId: 'p', createdAt: HALF_PAST, lastUpdatedAt: HALF_PAST, expiresAt: HALF_PAST + DAY })]);
      const clock = { now: HALF_PAST };
      const guard = guardAt(store, clock);
      for (let i = 0; i < 3600; i++) {
        clock.now = HALF_PAST + i * 1000;
        expect((await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: 'p', correlationId: `poll-${i}` })).decision).toBe('RETURN_STATUS');
      }
      const trail = await store.auditTrail({ taskId: 'p' });
      expect(trail).toEqual([
        expect.objectContaining({
          decision: 'RETURN_STATUS',
          authKey: A,
          taskId: 'p',
          count: 1800,
          firstAt: HALF_PAST,
          lastAt: HALF_PAST + 1799_000,
          at: HALF_PAST,
        }),
        expect.objectContaining({
          decision: 'RETURN_STATUS',
          count: 1800,
          firstAt: HALF_PAST + 1800_000,
          lastAt: HALF_PAST + 3599_000,
          correlationId: 'poll-3599',
          status: 'working',
          version: 1,
        }),
      ]);
    });

    it('keeps write decisions one exact line each, and counts reads and refusals per caller beside them', async () => {
      const store = await fresh('exact-writes');
      const clock = { now: T0 };
      const guard = guardAt(store, clock);
      const input = admission({ now: T0 });
      await store.admit(input);
      const id = input.taskId;
      for (let i = 0; i < 5; i++) await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: id });
      for (let i = 0; i < 3; i++) await guard.requestor.read({ auth: B, method: 'tasks/get', taskId: id });
      clock.now = T0 + 10;
      const done = await store.transition({
        taskId: id,
        authKey: A,
        write: { status: 'completed', expectedVersion: 1, result: ok },
        correlationId: 'w',
        now: T0 + 10,
      });
      expect(done.decision).toBe('APPLY_TRANSITION');
      clock.now = T0 + 20;
      await guard.requestor.read({ auth: A, method: 'tasks/result', taskId: id });
      const trail = await store.auditTrail({ taskId: id });
      expect(trail.map((e) => [e.decision, e.authKey, e.count ?? 'exact'])).toEqual([
        ['ACCEPT_TASK', A, 'exact'],
        ['RETURN_STATUS', A, 5],
        ['BLOCK_AUTH', B, 3],
        ['APPLY_TRANSITION', A, 'exact'],
        ['RETURN_RESULT', A, 1],
      ]);
      expect(trail[2]).toMatchObject({ status: null, version: null });
    });

    it('counts misses per caller: a caller spraying ids adds one row, which names the latest id', async () => {
      const store = await fresh('spray');
      const guard = guardAt(store, { now: T0 });
      for (let i = 0; i < 300; i++) expect((await guard.requestor.read({ auth: B, method: 'tasks/get', taskId: `guess-${i}` })).decision).toBe('NOT_FOUND');
      expect(await store.auditTrail({ taskId: 'guess-0' })).toEqual([]);
      expect(await store.auditTrail({ taskId: 'guess-299' })).toEqual([
        expect.objectContaining({ decision: 'NOT_FOUND', authKey: B, taskId: 'guess-299', count: 300 }),
      ]);
    });
  });

  describe('retention', () => {
    it('keeps an expired task (answering it as expired) and its trail for the retention, then removes both', async () => {
      const store = await fresh('retain-expired');
      const input = admission({ now: T0, ttl: HOUR, idempotencyKey: 'k' });
      await store.admit(input);
      const id = input.taskId;
      const clock = { now: T0 + 2 * HOUR };
      const guard = guardAt(store, clock);
      expect((await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: id })).decision).toBe('BLOCK_EXPIRED');
      expect(await store.sweepExpired({ now: clock.now, limit: 10, retentionMs: DAY })).toEqual({ tasks: 0, auditRows: 0, more: false });
      // The key of an expired task is free again while the task is kept.
      expect((await store.admit(admission({ now: clock.now, idempotencyKey: 'k' }))).decision).toBe('ACCEPT_TASK');
      expect((await store.sweepExpired({ now: T0 + HOUR + DAY - 1, limit: 10, retentionMs: DAY })).tasks).toBe(0);
      expect(await store.retentionDue({ now: T0 + HOUR + DAY, retentionMs: DAY })).toEqual({ tasks: 1, auditRows: 2 });
      expect(await store.sweepExpired({ now: T0 + HOUR + DAY, limit: 10, retentionMs: DAY })).toEqual({ tasks: 1, auditRows: 2, more: false });
      expect(await store.auditTrail({ taskId: id })).toEqual([]);
      expect(await store.inspectTask({ taskId: id })).toBeNull();
      expect((await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: id })).decision).toBe('NOT_FOUND');
    });

    it('removes a finished task without a ttl after its last update, never a running one, and audit rows whose task is gone', async () => {
      const store = await fresh('retain-finished');
      await store.seed([
        record({ taskId: 'done', status: 'failed', version: 2, ttl: null, expiresAt: null, lastUpdatedAt: T0 }),
        record({ taskId: 'running', ttl: null, expiresAt: null, lastUpdatedAt: T0 - DAY }),
      ]);
      const guard = guardAt(store, { now: T0 });
      await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: 'running' });
      await guard.requestor.read({ auth: A, method: 'tasks/get', taskId: 'gone-long-ago' });
      await guard.requestor.list({ auth: A });
      const later = T0 + 3 * DAY;
      // Counted first, and counting removes nothing.
      expect(await store.retentionDue({ now: later, retentionMs: 2 * DAY })).toEqual({ tasks: 1, auditRows: 2 });
      expect(await store.retentionDue({ now: later, retentionMs: 2 * DAY })).toEqual({ tasks: 1, auditRows: 2 });
      const swept = await store.sweepExpired({ now: later, limit: 10, retentionMs: 2 * DAY });
      // 'done' (it had no audit rows), then the miss and the list rows: older than the retention, no task.
      expect(swept).toEqual({ tasks: 1, auditRows: 2, more: false });
      expect(await store.inspectTask({ taskId: 'done' })).toBeNull();
      expect(await store.auditTrail({ taskId: 'gone-long-ago' })).toEqual([]);
      expect((await store.auditTrail({ taskId: 'running' })).map((e) => e.decision)).toEqual(['RETURN_STATUS']);
      expect((await store.get({ authKey: A, taskId: 'running', now: later })).decision).toBe('FOUND');
    });

    it('goes in bounded batches and says when more is due', async () => {
      const store = await fresh('retain-batches');
      await store.seed(Array.from({ length: 7 }, (_, i) => record({ taskId: `x${i}`, expiresAt: T0 - i })));
      const first = await store.sweepExpired({ now: T0, limit: 3, retentionMs: 0 });
      expect(first).toMatchObject({ tasks: 3, more: true });
      expect((await store.sweepExpired({ now: T0, limit: 3, retentionMs: 0 })).tasks).toBe(3);
      expect(await store.sweepExpired({ now: T0, limit: 3, retentionMs: 0 })).toMatchObject({ tasks: 1, more: false });
    });
  });
});
