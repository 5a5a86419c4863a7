import { acceptWatch } from '../../src/runtime/requests/watch-tasks.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { describe, expect, it } from 'vitest';
import { StoreSnapshot } from '../../src/metrics/store-snapshot.js';
import { checkReadiness } from '../../src/runtime/readiness.js';
import { ExpirySweeper } from '../../src/service/expiry-sweeper.js';
import { openGuard } from '../../src/service/guard.js';
import type { StoreOperation } from '../../src/service/guard-context.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { ALL_CAPS } from '../support/records.js';

const AUTH = 'acme/alice';
const TOOL = { name: 'export_ledger', execution: { taskSupport: 'required' as const } };
const CALL = { method: 'tools/call', params: { name: 'export_ledger', arguments: {}, task: {} } };

/**
 * Every store round trip the guard, the request layer's watch, the sweeper, the readiness check and
 * the metrics' store read make, as the metrics hear them (`storeCall`): the operations the store-call histogram had when
 * a Proxy timed every store method, each now timed where it is called.
 */
const TIMED: StoreOperation[] = [
  'admit',
  'answer',
  'ask',
  'auditTally',
  'cancel',
  'childTasks',
  'claim',
  'failOverdueInputs',
  'get',
  'heartbeat',
  'inputs',
  'inspectTask',
  'list',
  'liveVersions',
  'park',
  'parkedTasks',
  'recordDecision',
  'recordStep',
  'release',
  'schemaState',
  'sharedSecret',
  'sleepingTasks',
  'steps',
  'sweepExpired',
  'taskStats',
  'transition',
  'visibleTaskIds',
];

describe('store round trips', () => {
  it('are each reported once they settle, by operation, wherever the guard and its callers make them', async () => {
    let now = 1_000_000;
    const guard = openGuard({ store: new MemoryStore(), capabilities: ALL_CAPS, clock: () => now });
    const { requestor, worker, answers, context } = guard;
    const seen: Array<{ operation: string; ms: number; failed: boolean }> = [];
    // A decision observer too: a deadline's ended tasks are inspected only for someone who listens.
    context.events.add({ storeCall: (operation, ms, failed) => void seen.push({ operation, ms, failed }), decision: () => undefined });

    const created = await createTask(guard, { auth: AUTH, tool: TOOL, request: CALL });
    const taskId = created.record!.taskId;
    await requestor.read({ auth: AUTH, method: 'tasks/get', taskId });
    await requestor.list({ auth: AUTH });
    await acceptWatch({ guard }, { auth: AUTH, taskIds: [taskId], via: 'subscriptions/listen' });
    await requestor.recordDecision({ surface: 'read', decision: 'NOT_FOUND', auth: AUTH, taskId: 'unknown', read: true });
    const [claimed] = await worker.claim({ owner: 'w', leaseMs: 60_000, limit: 1, maxAttempts: 3, abandonedResult: null });
    let fence = { taskId, authKey: AUTH, owner: 'w', version: claimed!.version };
    await worker.heartbeat({ fence, leaseMs: 60_000 });
    fence = { ...fence, version: (await worker.setStatus({ fence, message: 'busy' })).record!.version };
    const step = { position: 0, name: 'one', kind: 'do' as const, status: 'completed' as const, attempts: 1, value: 1, startedAt: now };
    await worker.recordStep({ fence, step });
    await worker.lookupSteps({ auth: AUTH, taskId });
    await worker.lookup({ auth: AUTH, taskId });
    const asked = await worker.ask({ fence, askSeq: 0, questions: [{ key: 'ok', request: { method: 'elicitation/create' } }], timeoutMs: 1000 });
    await answers.inputs({ auth: AUTH, taskId });
    await worker.lookupInputs({ auth: AUTH, taskId });
    await answers.answer({ auth: AUTH, taskId, responses: { nope: { action: 'accept' } } });
    await worker.release({ fence: { ...fence, version: asked.record!.version } });
    now += 2000;
    const sweeper = new ExpirySweeper(guard, context.clock, { intervalMs: 0, inputDeadlineIntervalMs: 0 });
    expect(await sweeper.failOverdueOnce()).toBe(1);
    await sweeper.sweepOnce();
    const parking = (await createTask(guard, { auth: AUTH, tool: TOOL, request: CALL })).record!.taskId;
    const [held] = await worker.claim({ owner: 'w', leaseMs: 60_000, limit: 1, maxAttempts: 3, abandonedResult: null });
    await worker.park({ fence: { taskId: parking, authKey: AUTH, owner: 'w', version: held!.version }, reason: 'step order changed' });
    const other = (await createTask(guard, { auth: AUTH, tool: TOOL, request: CALL })).record!.taskId;
    await requestor.cancel({ auth: AUTH, taskId: other });
    await checkReadiness(guard);
    await new StoreSnapshot(context, 0, 2000).read();
    await new Promise((resolve) => setImmediate(resolve));

    expect([...new Set(seen.map((call) => call.operation))].sort()).toEqual([...TIMED].sort());
    expect(seen.every((call) => call.ms >= 0 && !call.failed)).toBe(true);
  });

  it('report a round trip that fails as failed, and cost nothing when nobody observes them', async () => {
    const store = new MemoryStore();
    const failing = Object.assign(Object.create(store) as TaskStore, { get: () => Promise.reject(new Error('gone')) });
    const guard = openGuard({ store: failing, capabilities: ALL_CAPS });
    const { context } = guard;
    // Nobody observes: no clock read, and the store's own promise comes back (no promise of its own).
    expect(context.started()).toBe(-1);
    const call = Promise.resolve(1);
    expect(context.timed('get', context.started(), call)).toBe(call);

    const seen: Array<[string, boolean]> = [];
    context.events.add({ storeCall: (operation, _ms, failed) => void seen.push([operation, failed]) });
    expect(context.started()).toBeGreaterThanOrEqual(0);
    await expect(guard.requestor.read({ auth: AUTH, method: 'tasks/get', taskId: 't' })).rejects.toThrow('gone');
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([['get', true]]);
  });
});
