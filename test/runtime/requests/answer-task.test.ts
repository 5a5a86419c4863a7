import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerTask, checkAnswer } from '../../../src/runtime/requests/answer-task.js';
import { getTask } from '../../../src/runtime/requests/get-task.js';
import type { TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { admitted, ALICE, asking, BOB, CONFIRM, decisionsOf, memoryRuntime } from './support.js';

let runtime: TaskRuntime;
beforeEach(async () => void (runtime = await memoryRuntime()));
afterEach(async () => runtime.close());

const yes = { action: 'accept', content: { ok: true } };

describe('answerTask', () => {
  it('stores the answers to outstanding questions, ignores other keys, and leaves the rest outstanding', async () => {
    const task = await admitted(runtime);
    await asking(runtime, task, { confirm: CONFIRM, again: CONFIRM });
    const out = await answerTask(runtime, { auth: ALICE, taskId: task.taskId, responses: { confirm: yes, stray: yes }, via: 'tasks/update' });
    expect(out).toEqual({ kind: 'answered', keys: ['confirm'] });
    expect(await getTask(runtime, { auth: ALICE, taskId: task.taskId, withQuestions: true })).toMatchObject({ questions: { again: CONFIRM } });
    expect(await answerTask(runtime, { auth: ALICE, taskId: task.taskId, responses: { confirm: yes }, via: 'tasks/update' })).toEqual({
      kind: 'answered',
      keys: [],
    });
  });

  it('refuses every answer when one is not an answer or does not match its schema, and stores none', async () => {
    const task = await admitted(runtime);
    await asking(runtime, task, { confirm: CONFIRM, again: CONFIRM });
    const wrongKind = await answerTask(runtime, { auth: ALICE, taskId: task.taskId, responses: { confirm: yes, again: { roots: [] } }, via: 'tasks/update' });
    expect(wrongKind).toEqual({ kind: 'not-an-answer', key: 'again', method: 'elicitation/create' });
    const wrongShape = await answerTask(runtime, {
      auth: ALICE,
      taskId: task.taskId,
      responses: { confirm: { action: 'accept', content: { ok: 'yes' } } },
      via: 'tasks/update',
    });
    expect(wrongShape).toMatchObject({ kind: 'refused', key: 'confirm' });
    expect(await getTask(runtime, { auth: ALICE, taskId: task.taskId, withQuestions: true })).toMatchObject({
      questions: { confirm: CONFIRM, again: CONFIRM },
    });
  });

  it("audits a miss, whichever method carried the answer; an implausible id is no one's, without a lookup", async () => {
    const task = await admitted(runtime);
    await asking(runtime, task, { confirm: CONFIRM });
    const seen = decisionsOf(runtime);
    for (const via of ['tasks/update', 'tasks/result'])
      expect(await answerTask(runtime, { auth: BOB, taskId: task.taskId, responses: { confirm: yes }, via })).toEqual({ kind: 'not-found' });
    expect(await answerTask(runtime, { auth: ALICE, taskId: 'x'.repeat(300), responses: { confirm: yes }, via: 'tasks/update' })).toEqual({
      kind: 'not-found',
    });
    expect(seen).toEqual(['input BLOCK_AUTH', 'input BLOCK_AUTH']);
  });

  it('checks one answer by the same rule on every path (checkAnswer)', async () => {
    expect(await checkAnswer('k', CONFIRM, yes, 1000)).toBeNull();
    expect(await checkAnswer('k', CONFIRM, undefined, 1000)).toEqual({ kind: 'not-an-answer', key: 'k', method: 'elicitation/create' });
    expect(await checkAnswer('k', CONFIRM, yes, 5)).toMatchObject({ kind: 'refused', key: 'k' });
  });
});
