import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getTask, ReadOfCaller } from '../../../src/runtime/requests/get-task.js';
import type { TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { admitted, ALICE, asking, BOB, CONFIRM, decisionsOf, memoryRuntime } from './support.js';

let runtime: TaskRuntime;
beforeEach(async () => void (runtime = await memoryRuntime()));
afterEach(async () => runtime.close());

describe('getTask', () => {
  it("answers the caller's task, without questions unless asked for", async () => {
    const task = await admitted(runtime);
    const out = await getTask(runtime, { auth: ALICE, taskId: task.taskId });
    expect(out).toMatchObject({ kind: 'task', record: { taskId: task.taskId, status: 'working' }, questions: null });
  });

  it('answers not-found for another caller, an unknown id and an implausible one alike; only the lookups are audited', async () => {
    const task = await admitted(runtime);
    const seen = decisionsOf(runtime);
    for (const taskId of [task.taskId, 'no-such-task']) expect(await getTask(runtime, { auth: BOB, taskId })).toEqual({ kind: 'not-found' });
    for (const taskId of ['x'.repeat(300), 'nul\u0000', '\ud800']) expect(await getTask(runtime, { auth: ALICE, taskId })).toEqual({ kind: 'not-found' });
    expect(seen).toEqual(['read BLOCK_AUTH', 'read NOT_FOUND']);
  });

  it('inlines every outstanding question of an input_required task when asked for', async () => {
    const task = await admitted(runtime);
    await asking(runtime, task, { confirm: CONFIRM, again: CONFIRM });
    const out = await getTask(runtime, { auth: ALICE, taskId: task.taskId, withQuestions: true });
    expect(out).toMatchObject({ kind: 'task', record: { status: 'input_required' }, questions: { confirm: CONFIRM, again: CONFIRM } });
    expect(await getTask(runtime, { auth: ALICE, taskId: task.taskId })).toMatchObject({ kind: 'task', questions: null });
  });

  it("reads its caller's signal only to look up the questions of an input_required task", async () => {
    const task = await admitted(runtime);
    let reads = 0;
    const caller = {
      get signal(): AbortSignal {
        reads += 1;
        return new AbortController().signal;
      },
    };
    expect(await getTask(runtime, new ReadOfCaller(ALICE, task.taskId, true, caller))).toMatchObject({ kind: 'task', questions: null });
    expect(reads).toBe(0);
    await asking(runtime, task, { confirm: CONFIRM });
    expect(await getTask(runtime, new ReadOfCaller(ALICE, task.taskId, true, caller))).toMatchObject({ questions: { confirm: CONFIRM } });
    expect(reads).toBe(1);
  });
});
