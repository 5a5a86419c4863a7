import { expect, it } from 'vitest';
import { parkDelay } from '../../../src/core/park-rules.js';
import type { Fence, TaskStore } from '../../../src/store/types.js';
import { T0 } from '../../support/records.js';
import { A, admission, defineStoreSuite, ok } from './store-suite.js';

// Parking: a run whose handler disagrees with its journal leaves its task working, due again
// after a backoff, marked parked. Every store must make the memory store's decisions.

const LEASE = 60_000;
const claimInput = (owner: string, now: number) => ({
  owner,
  now,
  leaseMs: LEASE,
  limit: 5,
  maxAttempts: 5,
  abandonedResult: ok,
  correlationId: `claim-${owner}`,
});
const REASON = 'step order changed at position 1: the journal has sleep "wait" and this run asked for step "a2" (version 3f2a9c01)';

defineStoreSuite('park', ({ fresh }) => {
  async function claimed(store: TaskStore, now = T0, owner = 'w1', taskId?: string): Promise<Fence> {
    if (taskId === undefined) taskId = (await store.admit(admission())).record!.taskId;
    const [held] = await store.claim(claimInput(owner, now));
    expect(held?.taskId).toBe(taskId);
    return { taskId, authKey: held!.authKey, owner, version: held!.version };
  }
  const park = (store: TaskStore, fence: Fence, now: number) => store.park({ fence, reason: REASON, now, correlationId: `park-${now}` });

  it('parks under the fence: working, no lease, due after the backoff, marked, and counted', async () => {
    const store = await fresh('park-apply');
    const fence = await claimed(store);
    const out = await park(store, fence, T0 + 10);
    expect(out.decision).toBe('APPLY_PARK');
    expect(out.parked).toEqual({ parkedAt: T0 + 10, parks: 1, wakeAt: T0 + 10 + parkDelay(1) });
    expect(out.record).toMatchObject({ status: 'working', version: fence.version + 1, leaseOwner: null, leaseExpiresAt: null, attempt: 0 });
    expect(out.record!.statusMessage).toMatch(/^parked: step order changed at position 1: .* \(version 3f2a9c01\); retrying at /);
    const seen = await store.inspectTask({ taskId: fence.taskId });
    expect(seen?.parked).toEqual({ parkedAt: T0 + 10, parks: 1 });
    expect(seen?.dispatch?.availableAt).toBe(T0 + 10 + parkDelay(1));
    expect((await store.parkedTasks({ now: T0 + 20 })).map((r) => r.count)).toEqual([1]);
    expect((await store.findTasks({ filter: { parked: true }, after: null, limit: 10 })).records.map((r) => r.taskId)).toEqual([fence.taskId]);
    // Not before the wake time: no claim; then any worker.
    expect(await store.claim(claimInput('w2', T0 + 10 + parkDelay(1) - 1))).toEqual([]);
    const again = await claimed(store, T0 + 10 + parkDelay(1), 'w2', fence.taskId);
    // A second park in a row doubles the wait and keeps when the streak began.
    const second = await park(store, again, T0 + 2000);
    expect(second.parked).toEqual({ parkedAt: T0 + 10, parks: 2, wakeAt: T0 + 2000 + parkDelay(2) });
    const lines = (await store.auditTrail({ taskId: fence.taskId })).filter((l) => l.surface === 'step');
    expect(lines.map((l) => [l.decision, l.detail])).toEqual([
      ['APPLY_PARK', 'parked 1'],
      ['APPLY_PARK', 'parked 2'],
    ]);
  });

  it('refuses a stale fence and a terminal task, writing nothing', async () => {
    const store = await fresh('park-refused');
    const fence = await claimed(store);
    expect((await store.park({ fence: { ...fence, version: fence.version - 1 }, reason: REASON, now: T0 + 5, correlationId: 'p' })).decision).toBe(
      'BLOCK_STALE_VERSION',
    );
    expect((await store.park({ fence: { ...fence, owner: 'w9' }, reason: REASON, now: T0 + 5, correlationId: 'p' })).decision).toBe('BLOCK_STALE_VERSION');
    expect((await store.cancel({ authKey: A, taskId: fence.taskId, now: T0 + 6, correlationId: 'c' })).decision).toBe('CANCEL_TASK');
    const refused = await park(store, fence, T0 + 7);
    expect(refused.decision).toBe('BLOCK_TERMINAL_REWRITE');
    expect(refused.parked).toBeNull();
    const seen = await store.inspectTask({ taskId: fence.taskId });
    expect(seen?.record.status).toBe('cancelled');
    expect(seen?.parked).toBeNull();
    expect(await store.parkedTasks({ now: T0 + 8 })).toEqual([]);
  });

  it('clears the mark with the next applied step, with a terminal write and with a cancel (its message too)', async () => {
    const store = await fresh('park-clear');
    const one = await claimed(store);
    await park(store, one, T0 + 10);
    const back = await claimed(store, T0 + 10 + parkDelay(1), 'w2', one.taskId);
    const step = { position: 0, name: 'a', kind: 'do' as const, status: 'completed' as const, attempts: 1, startedAt: T0 };
    expect((await store.recordStep({ fence: back, step, maxStepBytes: 100, now: T0 + 2000, correlationId: 's' })).decision).toBe('APPLY_STEP');
    expect((await store.inspectTask({ taskId: one.taskId }))?.parked).toBeNull();
    await store.transition({
      taskId: one.taskId,
      authKey: A,
      write: { status: 'completed', expectedVersion: back.version, result: ok },
      now: T0 + 2001,
      correlationId: 't',
    });

    const two = await claimed(store, T0 + 3000);
    await park(store, two, T0 + 3000);
    const cancelled = await store.cancel({ authKey: A, taskId: two.taskId, now: T0 + 3001, correlationId: 'c' });
    expect(cancelled.record).toMatchObject({ status: 'cancelled', statusMessage: null });
    expect((await store.inspectTask({ taskId: two.taskId }))?.parked).toBeNull();

    const three = await claimed(store, T0 + 4000);
    await park(store, three, T0 + 4000);
    const held = await claimed(store, T0 + 4000 + parkDelay(1), 'w3', three.taskId);
    const failed = await store.transition({
      taskId: three.taskId,
      authKey: A,
      write: { status: 'failed', expectedVersion: held.version, result: { error: { code: -32603, message: 'x' } }, statusMessage: null },
      now: T0 + 6000,
      correlationId: 'f',
    });
    expect(failed.decision).toBe('APPLY_TRANSITION');
    expect((await store.inspectTask({ taskId: three.taskId }))?.parked).toBeNull();
    expect(await store.parkedTasks({ now: T0 + 7000 })).toEqual([]);
    expect((await store.findTasks({ filter: { parked: true }, after: null, limit: 10 })).records).toEqual([]);
  });
});
