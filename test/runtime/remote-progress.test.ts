import { awaitTaskResult } from '../../src/service/result-wait.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import type { TaskStore } from '../../src/store/types.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

// Progress between runtimes on one shared store: the runtime that runs the task delivers it to
// its own listeners once (its echo from the store is dropped), another runtime hears it through
// the store's feed.

const AUTH = 'acme/alice';
const opened: Array<TaskRuntime | TaskStore> = [];
afterEach(async () => {
  for (const item of opened.splice(0).reverse()) await item.close();
});

/**
 * Reports three steps, then finishes. Each step waits until `heard(step)`, so that no two steps
 * wait in one coalescing window (where only the latest would travel), however slow the machine.
 */
const stepsTool = (heard: (step: number) => boolean) =>
  defineTool({
    name: 'steps',
    description: 'three steps',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    handler: async (_args, ctx) => {
      for (let step = 1; step <= 3; step++) {
        await ctx.reportProgress(step, 3, `step ${step}`);
        await until(() => (heard(step) ? true : undefined));
      }
      return { content: [] };
    },
  }) as unknown as TaskTool;

/** `store`, with every progress event its listeners are fed (echoes included) also noted in `fed`. */
function feedNoted(store: TaskStore, fed: string[]): TaskStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'listen') return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      const listen: TaskStore['listen'] = (onChange, onError, onProgress) =>
        target.listen(
          onChange,
          onError,
          onProgress === undefined
            ? undefined
            : (event) => {
                fed.push(`${event.taskId} ${event.progress}`);
                onProgress(event);
              },
        );
      return listen;
    },
  });
}

describe.each([sqliteHarness, postgresHarness])('$name: progress between runtimes', (harness) => {
  it('reaches another runtime’s listeners through the store, and its own runtime’s once', async () => {
    const [runStore, serveStore] = await harness.openMany('remote-progress', 2);
    opened.push(runStore!, serveStore!);
    const heard = { running: [] as string[], serving: [] as string[] };
    const steps = stepsTool((step) => heard.serving.length >= step);
    const make = (store: TaskStore, execute: boolean) => {
      const r = createRuntime({ store, tools: [steps], execute, logger: createLogger('silent'), sweepIntervalMs: 0, inputDeadlineIntervalMs: 0 });
      opened.push(r);
      return r;
    };
    // What the running runtime's store feeds it: its own progress comes back as an echo, to be dropped.
    const echoes: string[] = [];
    const running = make(feedNoted(runStore!, echoes), true);
    const serving = make(serveStore!, false);
    running.onProgress((taskId, progress, total, message) => void heard.running.push(`${taskId} ${progress}/${total} ${message}`));
    serving.onProgress((taskId, progress, total, message) => void heard.serving.push(`${taskId} ${progress}/${total} ${message}`));
    await Promise.all([running.start(), serving.start()]);

    const created = await createTask(serving.guard, {
      auth: AUTH,
      tool: { name: 'steps', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'steps', arguments: {}, task: {} } },
    });
    const taskId = created.record!.taskId;
    const done = await awaitTaskResult(serving.guard, { auth: AUTH, taskId });
    expect(done.record?.status).toBe('completed');
    // The last step is heard by the other runtime, and its echo has come back to the running one.
    await until(() => (heard.serving.length >= 3 && echoes.includes(`${taskId} 3`) ? true : undefined));
    const expected = [1, 2, 3].map((step) => `${taskId} ${step}/3 step ${step}`);
    expect(heard.serving).toEqual(expected);
    expect(heard.running).toEqual(expected);
  });
});
