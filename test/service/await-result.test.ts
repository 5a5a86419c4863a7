import { awaitTaskResult } from '../../src/service/result-wait.js';
import { describe, expect, it } from 'vitest';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { ALL_CAPS } from '../support/records.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const AUTH = 'acme/alice';

describe('awaitTaskResult', () => {
  it('writes one audit line per decision it goes through, not one per wake', async () => {
    const store = new MemoryStore();
    const guard = openGuard({ store, capabilities: ALL_CAPS });
    const created = await createTask(guard, {
      auth: AUTH,
      tool: { name: 't', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 't', arguments: {}, task: {} } },
    });
    const taskId = created.record!.taskId;
    const waiting = awaitTaskResult(guard, { auth: AUTH, taskId });
    let version = created.record!.version;
    // Ten status messages: ten wakes of the waiter, none of them news for the trail.
    for (let i = 0; i < 10; i++) {
      const out = await guard.worker.transition({ auth: AUTH, taskId, write: { status: 'working', expectedVersion: version, statusMessage: `step ${i}` } });
      version = out.record!.version;
      await new Promise((r) => setTimeout(r, 2));
    }
    await guard.worker.transition({ auth: AUTH, taskId, write: { status: 'completed', expectedVersion: version, result: { content: [] } } });
    expect((await waiting).decision).toBe('RETURN_RESULT');
    const reads = (await store.auditTrail({ taskId })).filter((e) => e.surface === 'read').map((e) => e.decision);
    expect(reads).toEqual(['WAIT_TERMINAL', 'RETURN_RESULT']);
  });
});
