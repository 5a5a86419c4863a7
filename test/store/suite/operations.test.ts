import { expect, it } from 'vitest';
import type { StepRecord } from '../../../src/core/step-rules.js';
import type { TaskStore } from '../../../src/store/types.js';
import { HOUR, T0 } from '../../support/records.js';
import { A, B, admission, defineStoreSuite, ok } from './store-suite.js';

// The operator's reads: every tenant's tasks, newest first, filtered and paged; one task with its
// outbox entry and questions; counts; the schema; the audit tail. The same answers from every store.

defineStoreSuite('operations', ({ fresh }) => {
  const C = 'tenant-a/carol';
  /** Six tasks of three principals, one a second apart, of two tools; one completed, one expired. */
  async function seeded(store: TaskStore): Promise<string[]> {
    const ids: string[] = [];
    const plan = [
      { authKey: A, toolName: 'export_ledger' },
      { authKey: B, toolName: 'export_ledger' },
      { authKey: C, toolName: 'sleep', toolVersion: 'v1' },
      { authKey: A, toolName: 'sleep', toolVersion: 'v2' },
      { authKey: B, toolName: 'sleep', ttl: 1000 },
      { authKey: A, toolName: 'export_ledger' },
    ];
    for (const [i, p] of plan.entries()) {
      const out = await store.admit(admission({ ...p, taskId: `op-${i}`, now: T0 + i * 1000 }));
      ids.push(out.record!.taskId);
    }
    await store.transition({
      taskId: 'op-1',
      authKey: B,
      write: { status: 'completed', expectedVersion: 1, result: ok },
      correlationId: 'c',
      now: T0 + 10_000,
    });
    return ids;
  }

  it('lists every tenant newest first, and each filter narrows', async () => {
    const store = await fresh('ops-list');
    await seeded(store);
    const ids = async (filter: Parameters<TaskStore['findTasks']>[0]['filter']) =>
      (await store.findTasks({ filter, after: null, limit: 50 })).records.map((r) => r.taskId);
    expect(await ids({})).toEqual(['op-5', 'op-4', 'op-3', 'op-2', 'op-1', 'op-0']);
    expect(await ids({ tenant: 'tenant-a' })).toEqual(['op-5', 'op-3', 'op-2', 'op-0']);
    expect(await ids({ tenant: 'tenant-a', subject: 'alice' })).toEqual(['op-5', 'op-3', 'op-0']);
    expect(await ids({ subject: 'bob' })).toEqual(['op-4', 'op-1']);
    expect(await ids({ status: 'completed' })).toEqual(['op-1']);
    expect(await ids({ tool: 'sleep' })).toEqual(['op-4', 'op-3', 'op-2']);
    expect(await ids({ toolVersion: 'v2' })).toEqual(['op-3']);
    expect(await ids({ tool: 'sleep', toolVersion: 'v1' })).toEqual(['op-2']);
    expect(await ids({ createdSince: T0 + 2000, createdBefore: T0 + 4000 })).toEqual(['op-3', 'op-2']);
    expect(await ids({ tenant: 'tenant', subject: 'a/alice' })).toEqual([]);
    expect(await ids({ tenant: 'nobody' })).toEqual([]);
  });

  it('narrows to sleeping tasks and to tasks waiting for an event (working, a pending row in the journal)', async () => {
    const store = await fresh('ops-waits');
    await seeded(store);
    const row = (taskId: string, kind: StepRecord['kind'], status: StepRecord['status']): StepRecord => ({
      taskId,
      position: 0,
      name: 'wait',
      kind,
      status,
      attempts: 0,
      value: undefined,
      error: null,
      valueBytes: 0,
      wakeAt: T0 + HOUR,
      concurrent: false,
      startedAt: T0,
      updatedAt: T0,
    });
    await store.seed(
      [],
      [],
      [row('op-2', 'sleep', 'sleeping'), row('op-3', 'event', 'waiting'), row('op-1', 'event', 'waiting'), row('op-0', 'sleep', 'woke')],
    );
    const ids = async (filter: Parameters<TaskStore['findTasks']>[0]['filter']) =>
      (await store.findTasks({ filter, after: null, limit: 50 })).records.map((r) => r.taskId);
    expect(await ids({ sleeping: true })).toEqual(['op-2']);
    expect(await ids({ waitingForEvent: true })).toEqual(['op-3']);
    expect(await ids({ waitingForEvent: true, tenant: 'tenant-b' })).toEqual([]);
  });

  it("audits an operator's cancel under the task's auth key, saying it was the operator's", async () => {
    const store = await fresh('ops-cancel');
    await seeded(store);
    expect((await store.cancel({ authKey: A, taskId: 'op-0', now: T0 + 20_000, correlationId: 'operator:x', byOperator: true })).decision).toBe('CANCEL_TASK');
    expect((await store.cancel({ authKey: A, taskId: 'op-5', now: T0 + 20_000, correlationId: 'client' })).decision).toBe('CANCEL_TASK');
    const cancelLine = async (taskId: string) => (await store.auditTrail({ taskId })).find((l) => l.decision === 'CANCEL_TASK');
    expect(await cancelLine('op-0')).toMatchObject({ authKey: A, correlationId: 'operator:x', detail: 'by operator', status: 'cancelled' });
    expect((await cancelLine('op-5'))?.detail ?? null).toBeNull();
  });

  it('pages by keyset without repeating or skipping, also among tasks created at the same millisecond', async () => {
    const store = await fresh('ops-page');
    for (const id of ['t-b', 't-a', 't-c']) await store.admit(admission({ taskId: id, now: T0 }));
    await store.admit(admission({ taskId: 't-0', now: T0 - 1 }));
    const seen: string[] = [];
    let after = null;
    for (let pages = 0; pages < 10; pages++) {
      const page = await store.findTasks({ filter: {}, after, limit: 2 });
      seen.push(...page.records.map((r) => r.taskId));
      const last = page.records.at(-1);
      if (!page.hasMore || last === undefined) break;
      after = { createdAt: last.createdAt, taskId: last.taskId };
    }
    expect(seen).toEqual(['t-c', 't-b', 't-a', 't-0']);
  });

  it('inspects one task of any tenant with its outbox entry and questions; an unknown id is null', async () => {
    const store = await fresh('ops-inspect');
    await seeded(store);
    const [claimed] = await store.claim({ owner: 'w1', now: T0 + 20_000, leaseMs: 5000, limit: 1, maxAttempts: 5, abandonedResult: ok, correlationId: 'k' });
    expect(claimed?.taskId).toBe('op-0');
    await store.ask({
      fence: { taskId: 'op-0', authKey: A, owner: 'w1', version: claimed!.version },
      askSeq: 0,
      questions: [{ key: 'q1', request: { method: 'elicitation/create', params: { message: 'sure?', requestedSchema: { type: 'object', properties: {} } } } }],
      now: T0 + 21_000,
      correlationId: 'ask',
    });
    const seen = await store.inspectTask({ taskId: 'op-0' });
    expect(seen?.record).toMatchObject({ taskId: 'op-0', authKey: A, status: 'input_required', attempt: 1, leaseOwner: 'w1' });
    expect(seen?.dispatch).toMatchObject({ claimedBy: 'w1', attempt: 1, doneAt: null, createdAt: T0 });
    expect(seen?.inputs.map((q) => [q.key, q.answeredAt])).toEqual([['q1', null]]);
    const done = await store.inspectTask({ taskId: 'op-1' });
    expect(done?.record.status).toBe('completed');
    expect(done?.dispatch?.doneAt).toBe(T0 + 10_000);
    expect(await store.inspectTask({ taskId: 'no-such-task' })).toBeNull();
  });

  it('counts by status and tool, finds the oldest working task and the expired records awaiting the sweep', async () => {
    const store = await fresh('ops-stats');
    await seeded(store);
    const stats = await store.taskStats({ now: T0 + 5 * HOUR - 1 });
    expect(stats.total).toBe(6);
    expect(stats.byStatus).toEqual({ working: 5, input_required: 0, completed: 1, failed: 0, cancelled: 0 });
    expect(stats.byTool).toEqual([
      { tool: 'export_ledger', status: 'completed', count: 1 },
      { tool: 'export_ledger', status: 'working', count: 2 },
      { tool: 'sleep', status: 'working', count: 3 },
    ]);
    // op-4 had a 1 s ttl; the others (an hour) are past theirs too at T0 + 5 h, but op-0 … at T0 + 30 min are not.
    expect(stats.expiredAwaitingSweep).toBe(6);
    expect(stats.oldestWorking).toBeNull();
    const early = await store.taskStats({ now: T0 + 30_000 });
    expect(early.expiredAwaitingSweep).toBe(1);
    expect(early.oldestWorking).toEqual({ taskId: 'op-0', authKey: A, createdAt: T0 });
    expect(early.pendingDispatch).toBe(5);
  });

  it('tallies abandoned tasks in the audit lines after a position, and reports a current schema', async () => {
    const store = await fresh('ops-tally');
    await store.admit(admission({ taskId: 'ab-1', now: T0 }));
    const start = await store.auditTally({ after: null });
    expect(start.abandoned).toBe(0);
    const claim = (now: number) => store.claim({ owner: 'w', now, leaseMs: 10, limit: 1, maxAttempts: 1, abandonedResult: ok, correlationId: 'k' });
    expect(await claim(T0 + 1)).toHaveLength(1);
    expect(await claim(T0 + 100)).toHaveLength(0);
    const after = await store.auditTally({ after: start.position });
    expect(after.abandoned).toBe(1);
    expect(after.position).toBeGreaterThan(start.position);
    expect((await store.auditTally({ after: after.position })).abandoned).toBe(0);
    expect(await store.schemaState()).toEqual({ pending: [], mismatch: null });
  });
});
