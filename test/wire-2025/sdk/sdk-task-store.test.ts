import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SdkTaskStore } from '../../../src/wire-2025/sdk/sdk-task-store.js';
import type { TaskStore } from '../../../src/store/types.js';
import { sdkClient, serveSdk } from '../../support/sdk-http.js';
import { postgresHarness, sqliteHarness } from '../../support/stores.js';
import { until } from '../../support/until.js';

// The SDK's own task runtime (`experimental.tasks.registerToolTask`, its tasks/* handlers) on
// tasklatch's stores, driven by the SDK client over Streamable HTTP with two callers.

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A user's SDK server: one task tool whose work finishes `delayMs` after the call, in this process. */
function userServer(taskStore: SdkTaskStore, late: unknown[]): McpServer {
  const server = new McpServer(
    { name: 'user-server', version: '1.0.0' },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore },
  );
  server.experimental.tasks.registerToolTask(
    'slow_sum',
    { description: 'adds, slowly', inputSchema: { a: z.number(), b: z.number(), delayMs: z.number() }, execution: { taskSupport: 'required' } },
    {
      async createTask({ a, b, delayMs }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60_000 });
        setTimeout(() => {
          extra.taskStore
            .storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: String(a + b) }] })
            .catch((error: unknown) => late.push(error));
        }, delayMs);
        return { task };
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    },
  );
  return server;
}

async function start(store: TaskStore, options: { clock?: () => number } = {}) {
  const taskStore = new SdkTaskStore({ store, ...options });
  const late: unknown[] = [];
  const http = await serveSdk(
    () => userServer(taskStore, late),
    (t) => taskStore.bind(t),
  );
  closers.push(() => http.close());
  return { taskStore, late, url: http.url };
}

const create = (client: Awaited<ReturnType<typeof sdkClient>>, args: Record<string, unknown>) =>
  client.request({ method: 'tools/call', params: { name: 'slow_sum', arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema);

async function settled(client: Awaited<ReturnType<typeof sdkClient>>, taskId: string): Promise<string> {
  for (let i = 0; i < 1200; i++) {
    const { status } = await client.experimental.tasks.getTask(taskId);
    if (status !== 'working') return status;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('task did not settle');
}

describe.each([sqliteHarness, postgresHarness])('SdkTaskStore on the $name store', (harness) => {
  const open = async (label: string) => {
    const [first, second] = await harness.openMany(label, 2);
    closers.push(async () => {
      await first!.close();
      if (second !== first) await second!.close();
    });
    return [first!, second!] as const;
  };
  const client = async (url: string, token: string) => {
    const c = await sdkClient(url, token);
    closers.push(() => c.close());
    return c;
  };

  it('stores the task durably under its caller: another server on the store reads it and its result', async () => {
    const [one, two] = await open('sdk_store_durable');
    const first = await start(one);
    const alice = await client(first.url, 'alice');
    const { task } = await create(alice, { a: 2, b: 3, delayMs: 50 });
    expect(task.status).toBe('working');
    expect(await settled(alice, task.taskId)).toBe('completed');
    // The record is tasklatch's own, bound to the caller's auth key.
    expect((await one.get({ authKey: 'acme/alice', taskId: task.taskId, now: Date.now() })).record).toMatchObject({
      toolName: 'slow_sum',
      status: 'completed',
    });
    // A second server process on the same store (here: another store handle) answers for it.
    const second = await start(two);
    const aliceThere = await client(second.url, 'alice');
    expect((await aliceThere.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    const result = await aliceThere.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: '5' }]);
    expect((await aliceThere.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
  });

  it('keeps the tenant boundary: another caller can neither read, list nor cancel the task', async () => {
    const [store] = await open('sdk_store_tenant');
    const server = await start(store);
    const alice = await client(server.url, 'alice');
    const bob = await client(server.url, 'bob');
    const { task } = await create(alice, { a: 1, b: 1, delayMs: 2000 });
    await expect(bob.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/not found/i);
    await expect(bob.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/not found/i);
    await expect(bob.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema)).rejects.toThrow(/not found/i);
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([]);
    expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('working');
  });

  it('latches a cancellation: the late result of the work is refused and the task stays cancelled', async () => {
    const [store] = await open('sdk_store_cancel');
    const server = await start(store);
    const alice = await client(server.url, 'alice');
    const { task } = await create(alice, { a: 4, b: 4, delayMs: 300 });
    expect((await alice.experimental.tasks.cancelTask(task.taskId)).status).toBe('cancelled');
    await until(() => (server.late.length === 0 ? undefined : true));
    expect(String(server.late[0])).toMatch(/already cancelled; a terminal status is final/);
    expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    const result = await alice.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: `Task ${task.taskId} was cancelled` }] });
  });

  it('runs the ttl from creation: past it the task is gone and its result write refused', async () => {
    const [store] = await open('sdk_store_ttl');
    let now = Date.now();
    const server = await start(store, { clock: () => now });
    const alice = await client(server.url, 'alice');
    const { task } = await create(alice, { a: 1, b: 2, delayMs: 400 });
    expect(task.ttl).toBe(60_000);
    now += 60_001;
    await expect(alice.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/not found/i);
    await until(() => (server.late.length === 0 ? undefined : true));
    expect(String(server.late[0])).toMatch(/not found/i);
  });
});
