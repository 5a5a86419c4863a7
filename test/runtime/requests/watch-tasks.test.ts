import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../../src/core/types.js';
import { acceptWatch, watchTasks } from '../../../src/runtime/requests/watch-tasks.js';
import type { TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { until } from '../../support/until.js';
import { admitted, ALICE, BOB, claim, decisionsOf, memoryRuntime } from './support.js';

let runtime: TaskRuntime;
beforeEach(async () => void (runtime = await memoryRuntime()));
afterEach(async () => runtime.close());

describe('acceptWatch', () => {
  it("accepts the caller's own ids and audits the others once per request", async () => {
    const mine = await admitted(runtime);
    const theirs = await admitted(runtime, BOB);
    const seen = decisionsOf(runtime);
    const out = await acceptWatch(runtime, { auth: ALICE, taskIds: [mine.taskId, theirs.taskId, 'unknown', mine.taskId], via: 'subscriptions/listen' });
    expect(out).toEqual({ accepted: [mine.taskId] });
    expect(seen).toEqual(['read NOT_FOUND']);
  });
});

describe('watchTasks', () => {
  it('tells each later version once, in order, and is done once the task is terminal', async () => {
    const task = await admitted(runtime);
    const told: TaskRecord[] = [];
    let done = false;
    const ended = new AbortController();
    const watch = watchTasks(runtime, {
      auth: ALICE,
      taskIds: [task.taskId],
      seen: task.version,
      signal: ended.signal,
      onRecord: (record) => void told.push(record),
      onDone: () => void (done = true),
    });
    await watch.readNow();
    expect(told).toEqual([]);
    const fence = await claim(runtime, task);
    await runtime.guard.worker.complete({ fence, result: { content: [] } });
    await until(() => (done ? true : undefined));
    expect(told.map((r) => r.status)).toEqual(['working', 'completed']);
    expect(told.map((r) => r.version)).toEqual([...told.map((r) => r.version)].sort((a, b) => a - b));
    ended.abort();
  });

  it('reads the current state at once when asked, and nothing after the signal ends it', async () => {
    const task = await admitted(runtime);
    const told: string[] = [];
    const ended = new AbortController();
    const watch = watchTasks(runtime, { auth: ALICE, taskIds: [task.taskId], signal: ended.signal, onRecord: (r) => void told.push(r.status) });
    await watch.readNow();
    expect(told).toEqual(['working']);
    ended.abort();
    await runtime.guard.requestor.cancel({ auth: ALICE, taskId: task.taskId });
    await new Promise((r) => setTimeout(r, 20));
    expect(told).toEqual(['working']);
  });
});
