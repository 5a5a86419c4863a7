import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InputRequest } from '../../../src/core/input-rules.js';
import { awaitResult, peekResult } from '../../../src/runtime/requests/await-result.js';
import type { TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { until } from '../../support/until.js';
import { admitted, ALICE, asking, BOB, claim, CONFIRM, memoryRuntime } from './support.js';

let runtime: TaskRuntime;
beforeEach(async () => void (runtime = await memoryRuntime()));
afterEach(async () => runtime.close());

const RESULT = { content: [{ type: 'text', text: 'done' }] };

describe('awaitResult', () => {
  it('holds until the task ends, then answers its record', async () => {
    const task = await admitted(runtime);
    const fence = await claim(runtime, task);
    const held = awaitResult(runtime, { auth: ALICE, taskId: task.taskId, fallbackPollMs: 50 });
    expect(await peekResult(runtime, { auth: ALICE, taskId: task.taskId })).toMatchObject({ kind: 'running', record: { status: 'working' } });
    await runtime.guard.worker.complete({ fence, result: RESULT });
    expect(await held).toMatchObject({ kind: 'result', record: { status: 'completed', result: RESULT } });
    expect(await peekResult(runtime, { auth: ALICE, taskId: task.taskId })).toMatchObject({ kind: 'result' });
  });

  it('answers abandoned when the requestor goes first, and not-found for another caller or an implausible id', async () => {
    const task = await admitted(runtime);
    const gone = new AbortController();
    const held = awaitResult(runtime, { auth: ALICE, taskId: task.taskId, signal: gone.signal, fallbackPollMs: 50 });
    gone.abort();
    expect(await held).toEqual({ kind: 'abandoned' });
    expect(await awaitResult(runtime, { auth: BOB, taskId: task.taskId })).toEqual({ kind: 'not-found' });
    expect(await awaitResult(runtime, { auth: ALICE, taskId: 'x'.repeat(300) })).toEqual({ kind: 'not-found' });
  });

  it('asks the waiting requestor each outstanding question once and stores its answer through answerTask', async () => {
    const task = await admitted(runtime);
    await asking(runtime, task, { confirm: CONFIRM });
    const asked: Array<[string, string, InputRequest]> = [];
    const gone = new AbortController();
    const held = awaitResult(runtime, {
      auth: ALICE,
      taskId: task.taskId,
      signal: gone.signal,
      fallbackPollMs: 20,
      ask: async (taskId, key, request) => {
        asked.push([taskId, key, request]);
        return { action: 'accept', content: { ok: true } };
      },
    });
    await until(async () => ((await runtime.guard.worker.lookup({ auth: ALICE, taskId: task.taskId })).record?.status === 'working' ? true : undefined));
    gone.abort();
    await held;
    expect(asked).toEqual([[task.taskId, 'confirm', CONFIRM]]);
  });
});
