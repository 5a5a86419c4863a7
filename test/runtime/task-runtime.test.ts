import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { cancelTask } from '../../src/runtime/requests/cancel-task.js';

const AUTH = 'acme/alice';
const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
});

/** A tool that reports progress once, then waits for its abort signal. */
const waiting = defineTool({
  name: 'waiting',
  description: 'waits until stopped',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async (_args, ctx) => {
    await ctx.reportProgress(1, 2, 'half');
    await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
    return { content: [] };
  },
}) as unknown as TaskTool;
const plain = defineTool({
  name: 'plain',
  description: 'never a task',
  inputSchema: z.object({}),
  handler: async () => ({ content: [] }),
}) as unknown as TaskTool;

function runtime(tools: TaskTool[], options: { callersIdentified?: boolean; execute?: boolean } = {}): TaskRuntime {
  const r = createRuntime({ store: new MemoryStore(), tools, logger: createLogger('silent'), sweepIntervalMs: 0, ...options });
  runtimes.push(r);
  return r;
}

async function admit(r: TaskRuntime): Promise<string> {
  const out = await createTask(r.guard, {
    auth: AUTH,
    tool: { name: 'waiting', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'waiting', arguments: {}, task: {} } },
  });
  return out.record!.taskId;
}

describe('TaskRuntime', () => {
  it('derives the task capabilities from its tools and whether callers are identified', () => {
    expect(runtime([plain]).capabilities).toEqual({ cancel: {} });
    expect(runtime([plain, waiting]).capabilities).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    expect(runtime([waiting], { callersIdentified: true }).capabilities).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    expect(runtime([waiting], { execute: false }).worker).toBeNull();
  });

  it('runs admitted tasks, relays their progress, and stops a cancelled handler in this process at once', async () => {
    const r = runtime([waiting]);
    const progress: unknown[] = [];
    r.onProgress((taskId, value, total, message) => void progress.push({ taskId, value, total, message }));
    await r.start();
    const taskId = await admit(r);
    await until(() => (progress.length === 0 ? undefined : true));
    expect(progress).toEqual([{ taskId, value: 1, total: 2, message: 'half' }]);
    expect(r.worker?.executor.active).toBe(1);
    const abort = vi.spyOn(r.worker!.executor, 'abort');
    const out = await cancelTask(r, { auth: AUTH, taskId });
    expect(out.kind).toBe('cancelled');
    // The handler is told before the reply goes out, not only through the change feed.
    expect(abort).toHaveBeenCalledWith(taskId, 'cancelled');
    await until(() => (r.worker?.executor.active !== 0 ? undefined : true));
    expect(r.worker?.executor.active).toBe(0);
    expect((await r.guard.worker.lookup({ auth: AUTH, taskId })).record?.status).toBe('cancelled');
  });
});
