import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cancelTask } from '../../../src/runtime/requests/cancel-task.js';
import type { TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { admitted, ALICE, BOB, memoryRuntime } from './support.js';

let runtime: TaskRuntime;
beforeEach(async () => void (runtime = await memoryRuntime()));
afterEach(async () => runtime.close());

describe('cancelTask', () => {
  it('latches the cancellation and stops a handler running here; a second cancel finds the task terminal', async () => {
    const task = await admitted(runtime);
    const stopped: string[] = [];
    const host = { guard: runtime.guard, stopRun: (taskId: string) => void stopped.push(taskId) };
    expect(await cancelTask(host, { auth: ALICE, taskId: task.taskId })).toMatchObject({ kind: 'cancelled', record: { status: 'cancelled' } });
    expect(stopped).toEqual([task.taskId]);
    expect(await cancelTask(host, { auth: ALICE, taskId: task.taskId })).toMatchObject({ kind: 'terminal', record: { status: 'cancelled' } });
    expect(stopped).toEqual([task.taskId]);
  });

  it("answers not-found for another caller's task and an implausible id", async () => {
    const task = await admitted(runtime);
    expect(await cancelTask(runtime, { auth: BOB, taskId: task.taskId })).toEqual({ kind: 'not-found' });
    expect(await cancelTask(runtime, { auth: ALICE, taskId: 'x'.repeat(300) })).toEqual({ kind: 'not-found' });
  });
});
