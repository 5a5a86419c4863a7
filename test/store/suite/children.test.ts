import { expect, it } from 'vitest';
import type { TaskStore } from '../../../src/store/types.js';
import { T0 } from '../../support/records.js';
import { A, admission, B, defineStoreSuite, ok, request } from './store-suite.js';

// Child tasks: a task admitted with its parent's id carries it, its principal's list leaves it
// out, the parent finds it, and its end wakes a parent that waits without a run. Every store must
// make the memory store's decisions.

const claimInput = (owner: string, now: number) => ({
  owner,
  now,
  leaseMs: 60_000,
  limit: 10,
  maxAttempts: 5,
  abandonedResult: ok,
  correlationId: `claim-${owner}`,
});

defineStoreSuite('children', ({ fresh }) => {
  async function family(store: TaskStore): Promise<{ parent: string; children: string[] }> {
    const parent = (await store.admit(admission({ request: request({ month: 'parent' }) }))).record!.taskId;
    const children: string[] = [];
    for (const n of [1, 2]) {
      const out = await store.admit(admission({ request: request({ n }), parentTaskId: parent, now: T0 + n }));
      expect(out.decision).toBe('ACCEPT_TASK');
      expect(out.record!.parentTaskId).toBe(parent);
      children.push(out.record!.taskId);
    }
    return { parent, children };
  }

  it('records the parent, hides children from the list, and keeps each child readable by id', async () => {
    const store = await fresh('children-list');
    const { parent, children } = await family(store);
    const page = await store.list({ authKey: A, now: T0 + 10, after: null, limit: 50 });
    expect(page.records.map((r) => r.taskId)).toEqual([parent]);
    const child = await store.get({ authKey: A, taskId: children[0]!, now: T0 + 10 });
    expect(child.decision).toBe('FOUND');
    expect(child.record?.parentTaskId).toBe(parent);
    expect((await store.get({ authKey: B, taskId: children[0]!, now: T0 + 10 })).decision).not.toBe('FOUND');
  });

  it('finds a parent’s children for its own auth key only, oldest first', async () => {
    const store = await fresh('children-find');
    const { parent, children } = await family(store);
    expect((await store.childTasks({ authKey: A, taskId: parent })).map((r) => r.taskId)).toEqual(children);
    expect(await store.childTasks({ authKey: B, taskId: parent })).toEqual([]);
    expect(await store.childTasks({ authKey: A, taskId: children[0]! })).toEqual([]);
  });

  it('the operator’s filter by parent finds the children only', async () => {
    const store = await fresh('children-filter');
    const { parent, children } = await family(store);
    const page = await store.findTasks({ filter: { parentTaskId: parent }, after: null, limit: 10 });
    expect(page.records.map((r) => r.taskId).sort()).toEqual([...children].sort());
    expect((await store.findTasks({ filter: { parentTaskId: 'none' }, after: null, limit: 10 })).records).toEqual([]);
  });

  it('an idempotent replay of a child finds the same child (a parent run started again)', async () => {
    const store = await fresh('children-replay');
    const parent = (await store.admit(admission())).record!.taskId;
    const key = `tasklatch:child:${parent}:c1`;
    const first = await store.admit(admission({ request: request({ n: 1 }), idempotencyKey: key, parentTaskId: parent }));
    const again = await store.admit(admission({ request: request({ n: 1 }), idempotencyKey: key, parentTaskId: parent, now: T0 + 5 }));
    expect(again.decision).toBe('REPLAY_TASK');
    expect(again.record!.taskId).toBe(first.record!.taskId);
    expect(await store.childTasks({ authKey: A, taskId: parent })).toHaveLength(1);
  });

  it('wakes a parent waiting without a run, and only such a parent', async () => {
    const store = await fresh('children-wake');
    const { parent, children } = await family(store);
    // A parent held by a run is not woken (its run sees the child itself).
    const claimed = await store.claim(claimInput('w1', T0 + 20));
    const held = claimed.find((r) => r.taskId === parent)!;
    expect(await store.wakeParent({ taskId: children[0]!, now: T0 + 21 })).toBeNull();
    // Suspended until much later (a recheck): the child's end makes it due now.
    const fence = { taskId: parent, authKey: A, owner: 'w1', version: held.version };
    const step = { position: 0, name: 'c1', kind: 'child' as const, status: 'waiting' as const, attempts: 0, value: children[0], startedAt: T0 + 20 };
    const suspended = await store.recordStep({
      fence,
      step,
      suspend: { wakeAt: T0 + 60_000, statusMessage: 'waiting' },
      maxStepBytes: 1 << 20,
      now: T0 + 22,
      correlationId: 'c',
    });
    expect(suspended.decision).toBe('APPLY_STEP');
    expect((await store.claim(claimInput('w2', T0 + 30))).map((r) => r.taskId)).not.toContain(parent);
    expect(await store.wakeParent({ taskId: children[0]!, now: T0 + 40 })).toBe(parent);
    expect(await store.wakeParent({ taskId: children[0]!, now: T0 + 40 })).toBeNull();
    expect((await store.claim(claimInput('w2', T0 + 41))).map((r) => r.taskId)).toContain(parent);
    // No parent: nothing to wake.
    expect(await store.wakeParent({ taskId: parent, now: T0 + 50 })).toBeNull();
    const [row] = await store.steps({ authKey: A, taskId: parent, now: T0 + 50 }).then((o) => o.steps ?? []);
    expect(row).toMatchObject({ kind: 'child', status: 'waiting', value: children[0] });
  });
});
