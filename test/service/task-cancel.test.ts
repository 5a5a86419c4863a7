import { describe, expect, it } from 'vitest';
import { TasklatchError } from '../../src/core/errors.js';
import type { TaskCapabilities } from '../../src/core/types.js';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { ALL_CAPS } from '../support/records.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const AUTH = 'acme/alice';

async function admitted(capabilities: TaskCapabilities = ALL_CAPS) {
  const store = new MemoryStore();
  const guard = openGuard({ store, capabilities });
  const created = await createTask(guard, {
    auth: AUTH,
    tool: { name: 't', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 't', arguments: {}, task: {} } },
  });
  return { store, guard, taskId: created.record!.taskId };
}

describe('RequestorSurface.cancel', () => {
  it('latches the cancellation, publishes it and writes one audit line; a second cancel finds it terminal', async () => {
    const { store, guard, taskId } = await admitted();
    const heard: Array<number | undefined> = [];
    guard.context.changes.subscribe(taskId, (version) => heard.push(version));
    const out = await guard.requestor.cancel({ auth: AUTH, taskId });
    expect(out.decision).toBe('CANCEL_TASK');
    expect(out.record?.status).toBe('cancelled');
    expect(heard).toEqual([out.record!.version]);
    expect((await guard.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('ALREADY_TERMINAL');
    expect((await guard.requestor.cancel({ auth: 'acme/bob', taskId })).decision).toBe('BLOCK_AUTH');
    const cancels = (await store.auditTrail({ taskId })).filter((e) => e.decision === 'CANCEL_TASK');
    expect(cancels).toHaveLength(1);
  });

  it('refuses on a receiver without the cancel capability, audited, with the task left as it was', async () => {
    const { store, guard, taskId } = await admitted({ requests: { tools: { call: {} } } });
    expect(await guard.requestor.cancel({ auth: AUTH, taskId })).toEqual({ decision: 'BLOCK_CAPABILITY', record: null });
    expect((await guard.worker.lookup({ auth: AUTH, taskId })).record?.status).toBe('working');
    expect((await store.auditTrail({ taskId })).map((e) => e.decision)).toContain('BLOCK_CAPABILITY');
  });

  it('is not a read: read given tasks/cancel throws INVALID_INPUT and cancels nothing', async () => {
    const { guard, taskId } = await admitted();
    const method = 'tasks/cancel' as 'tasks/get';
    await expect(guard.requestor.read({ auth: AUTH, method, taskId })).rejects.toThrow(TasklatchError);
    await expect(guard.requestor.read({ auth: AUTH, method, taskId })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect((await guard.worker.lookup({ auth: AUTH, taskId })).record?.status).toBe('working');
  });
});
