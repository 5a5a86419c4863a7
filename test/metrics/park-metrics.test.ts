import { afterEach, describe, expect, it } from 'vitest';
import { TaskMetrics } from '../../src/metrics/task-metrics.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { ALL_CAPS } from '../support/records.js';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const AUTH = 'acme/alice';
const CLAIM = { owner: 'w1', leaseMs: 60_000, limit: 5, maxAttempts: 5, abandonedResult: { content: [], isError: true } };

describe('park metrics', () => {
  it('count parked tasks by app and tool, and drop a pair once none is parked', async () => {
    const store = new MemoryStore();
    const guard = openGuard({ store, capabilities: ALL_CAPS });
    const metrics = new TaskMetrics(guard.context, { storeReadIntervalMs: 0, processMetrics: false });
    closers.push(
      () => store.close(),
      () => metrics.close(),
    );
    const admit = async (name: string) =>
      (
        await createTask(guard, {
          auth: AUTH,
          tool: { name, execution: { taskSupport: 'required' } },
          request: { method: 'tools/call', params: { name, arguments: {}, task: {} } },
        })
      ).record!.taskId;
    const ids = [await admit('deploy_demo'), await admit('deploy_demo'), await admit('other')];
    const held = await guard.worker.claim(CLAIM);
    expect(held.map((r) => r.taskId).sort()).toEqual([...ids].sort());
    for (const r of held) {
      const fence = { taskId: r.taskId, authKey: r.authKey, owner: 'w1', version: r.version };
      expect((await guard.worker.park({ fence, reason: 'step order changed at position 1: …' })).decision).toBe('APPLY_PARK');
    }
    const body = (await metrics.render()).body;
    expect(body).toMatch(/^tasklatch_tasks_parked\{app="default",tool="deploy_demo"\} 2$/m);
    expect(body).toMatch(/^tasklatch_tasks_parked\{app="default",tool="other"\} 1$/m);
    expect(body).toMatch(/^tasklatch_decisions_total\{surface="step",decision="APPLY_PARK"\} 3$/m);
    expect((await guard.requestor.cancel({ auth: AUTH, taskId: ids[2]! })).decision).toBe('CANCEL_TASK');
    const after = (await metrics.render()).body;
    expect(after).toMatch(/^tasklatch_tasks_parked\{app="default",tool="deploy_demo"\} 2$/m);
    expect(after).not.toMatch(/^tasklatch_tasks_parked\{app="default",tool="other"\}/m);
  });
});
