import { expect, it } from 'vitest';
import type { StepWrite } from '../../../src/core/step-rules.js';
import type { Fence, SendEventInput, TaskStore } from '../../../src/store/types.js';
import { HOUR, T0 } from '../../support/records.js';
import { A, B, admission, defineStoreSuite, ok } from './store-suite.js';

// Events into a task: a send stores the event (bounded, audited) and wakes a waiting task; a
// wait takes the first pending event of its type, the same one again at the same position; a
// suspension that records a wait is due at once when an event of its type is already pending.

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
const waiting = (position: number, wakeAt: number): StepWrite => ({
  position,
  name: 'paid',
  kind: 'event',
  status: 'waiting',
  attempts: 0,
  wakeAt,
  startedAt: T0 + 2,
});

defineStoreSuite('events', ({ fresh }) => {
  async function claimed(store: TaskStore, now = T0): Promise<Fence> {
    const admitted = (await store.admit(admission())).record!;
    const [held] = await store.claim(claimInput('w1', now));
    expect(held?.taskId).toBe(admitted.taskId);
    return { taskId: admitted.taskId, authKey: admitted.authKey, owner: 'w1', version: held!.version };
  }
  const send = (store: TaskStore, taskId: string, o: Partial<SendEventInput> = {}) =>
    store.sendEvent({
      taskId,
      authKey: A,
      type: 'payment.succeeded',
      payloadText: '{"amount":42}',
      key: null,
      maxEventBytes: 1024,
      maxPendingEvents: 3,
      now: T0 + 5,
      correlationId: 'send',
      ...o,
    });
  const take = (store: TaskStore, fence: Fence, position: number, type = 'payment.succeeded', now = T0 + 6) => store.takeEvent({ fence, type, position, now });
  /** Records the wait `waiting` until an hour on, suspending the task (a run's fresh wait). */
  const WAKE = T0 + HOUR / 2;
  const suspendIn = (store: TaskStore, fence: Fence, eventType: string, now = T0 + 10) =>
    store.recordStep({
      fence,
      step: waiting(0, WAKE),
      suspend: { wakeAt: WAKE, statusMessage: 'waiting' },
      eventType,
      maxStepBytes: 100,
      now,
      correlationId: 'wait',
    });
  const due = async (store: TaskStore, now: number) => (await store.claim(claimInput('w2', now))).map((r) => r.taskId);

  it('keeps an event sent before the wait, and a wait takes the first of its type, the same one again at its position', async () => {
    const store = await fresh('event-before');
    const fence = await claimed(store);
    expect(await send(store, fence.taskId, { type: 'other', payloadText: '"x"' })).toMatchObject({ decision: 'APPLY_EVENT', seq: 1, woke: false });
    expect(await send(store, fence.taskId)).toMatchObject({
      decision: 'APPLY_EVENT',
      seq: 2,
      woke: false,
      record: { taskId: fence.taskId, version: fence.version },
    });
    expect(await send(store, fence.taskId, { payloadText: '{"amount":7}' })).toMatchObject({ decision: 'APPLY_EVENT', seq: 3 });
    expect(await take(store, fence, 4)).toEqual({ decision: 'HELD', event: { seq: 2, payload: { amount: 42 } } });
    // Taken again at the same position (a run that stopped before recording the value): the same one.
    expect(await take(store, fence, 4)).toEqual({ decision: 'HELD', event: { seq: 2, payload: { amount: 42 } } });
    expect(await take(store, fence, 5)).toEqual({ decision: 'HELD', event: { seq: 3, payload: { amount: 7 } } });
    expect(await take(store, fence, 6)).toEqual({ decision: 'HELD', event: null });
    // A run that no longer holds the task takes nothing.
    expect(await take(store, Object.assign({}, fence, { version: fence.version + 1 }), 7, 'other')).toEqual({ decision: 'LOST', event: null });
    expect(await take(store, fence, 7, 'other')).toEqual({ decision: 'HELD', event: { seq: 1, payload: 'x' } });
  });

  it('wakes a task waiting for an event: its outbox entry is due at once', async () => {
    const store = await fresh('event-wakes');
    const fence = await claimed(store);
    const suspended = await suspendIn(store, fence, 'payment.succeeded');
    expect(suspended.decision).toBe('APPLY_STEP');
    expect(await due(store, T0 + 20)).toEqual([]);
    const sent = await send(store, fence.taskId, { now: T0 + 30 });
    // A new version: other processes are told of it (a version they know would say nothing new).
    expect(sent).toMatchObject({ decision: 'APPLY_EVENT', seq: 1, woke: true, record: { version: suspended.record!.version + 1, lastUpdatedAt: T0 + 30 } });
    expect((await store.get({ authKey: A, taskId: fence.taskId, now: T0 + 30 })).record?.version).toBe(suspended.record!.version + 1);
    expect(await due(store, T0 + 31)).toEqual([fence.taskId]);
  });

  it('makes a wait due at once when it suspends with an event of its type pending, not one of another type', async () => {
    const store = await fresh('event-pending');
    const fence = await claimed(store);
    await send(store, fence.taskId, { type: 'other' });
    expect((await suspendIn(store, fence, 'payment.succeeded')).dueNow).toBeUndefined();
    expect(await due(store, T0 + 20)).toEqual([]);
    const other = await claimed(store, T0 + 21);
    await send(store, other.taskId, { now: T0 + 22 });
    // The outcome says so: the run's own worker looks at once, not at the timeout.
    expect((await suspendIn(store, other, 'payment.succeeded', T0 + 23)).dueNow).toBe(true);
    expect(await due(store, T0 + 24)).toEqual([other.taskId]);
    // The first one is due at its timeout.
    expect(await due(store, WAKE)).toContain(fence.taskId);
  });

  it('refuses unknown, foreign, finished and expired tasks, payloads too large and too many pending, and audits each send', async () => {
    const store = await fresh('event-refusals');
    const fence = await claimed(store);
    expect(await send(store, 'nope')).toMatchObject({ decision: 'NOT_FOUND', record: null, seq: null });
    expect(await send(store, fence.taskId, { authKey: B })).toMatchObject({ decision: 'BLOCK_AUTH', record: null, seq: null });
    expect(await send(store, fence.taskId, { payloadText: JSON.stringify('x'.repeat(1100)) })).toMatchObject({ decision: 'BLOCK_EVENT_SIZE', seq: null });
    // An operator (no auth key) reaches any task.
    expect(await send(store, fence.taskId, { authKey: null })).toMatchObject({ decision: 'APPLY_EVENT', seq: 1 });
    expect(await send(store, fence.taskId)).toMatchObject({ decision: 'APPLY_EVENT', seq: 2 });
    expect(await send(store, fence.taskId)).toMatchObject({ decision: 'APPLY_EVENT', seq: 3 });
    expect(await send(store, fence.taskId)).toMatchObject({ decision: 'BLOCK_EVENT_LIMIT', seq: null });
    // A taken event leaves room for another.
    await take(store, fence, 0);
    expect(await send(store, fence.taskId)).toMatchObject({ decision: 'APPLY_EVENT', seq: 4 });
    expect(await send(store, fence.taskId, { now: T0 + HOUR + 1 })).toMatchObject({ decision: 'BLOCK_EXPIRED', seq: null });
    await store.cancel({ authKey: A, taskId: fence.taskId, now: T0 + 7, correlationId: 'c' });
    expect(await send(store, fence.taskId, { now: T0 + 8 })).toMatchObject({ decision: 'BLOCK_TERMINAL_REWRITE', seq: null, record: { status: 'cancelled' } });
    const lines = (await store.auditTrail({ taskId: fence.taskId })).filter((l) => l.surface === 'event');
    expect(lines.map((l) => [l.decision, l.authKey, l.detail])).toEqual([
      ['BLOCK_AUTH', B, 'payment.succeeded'],
      ['BLOCK_EVENT_SIZE', A, 'payment.succeeded'],
      ['APPLY_EVENT', A, 'payment.succeeded#1'],
      ['APPLY_EVENT', A, 'payment.succeeded#2'],
      ['APPLY_EVENT', A, 'payment.succeeded#3'],
      ['BLOCK_EVENT_LIMIT', A, 'payment.succeeded'],
      ['APPLY_EVENT', A, 'payment.succeeded#4'],
      ['BLOCK_TERMINAL_REWRITE', A, 'payment.succeeded'],
      ['BLOCK_EXPIRED', A, 'payment.succeeded'],
    ]);
  });
});
