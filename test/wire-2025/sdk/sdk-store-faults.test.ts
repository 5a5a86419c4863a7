import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CreateTaskResultSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SdkTaskStore } from '../../../src/wire-2025/sdk/sdk-task-store.js';
import { sdkClient, serveSdk } from '../../support/sdk-http.js';
import { FAULT_TEXT, StoreFaults } from '../../support/store-faults.js';
import { postgresHarness, sqliteHarness } from '../../support/stores.js';

// The SDK's own tasks/* handlers on tasklatch's store (`SdkTaskStore`): a store fault is the
// retryable -32001 Store unavailable, never the SDK's -32603 carrying the store's text (a
// database's address), and the same request works once the store is back. The SDK's tasks/list
// handler answers any error as -32602 with the error's message: there it says Store unavailable.

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function userServer(taskStore: SdkTaskStore): McpServer {
  const server = new McpServer(
    { name: 'user-server', version: '1.0.0' },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore },
  );
  server.experimental.tasks.registerToolTask(
    'later',
    { description: 'a task that stays working', inputSchema: { n: z.number() }, execution: { taskSupport: 'required' } },
    {
      createTask: async (_args, extra) => ({ task: await extra.taskStore.createTask({ ttl: 60_000 }) }),
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    },
  );
  return server;
}

describe.each([sqliteHarness, postgresHarness])('SdkTaskStore on a faulty $name store', (harness) => {
  it('answers -32001 Store unavailable for tasks/get, tasks/list and tasks/cancel, and serves them once the store is back', async () => {
    const raw = await harness.open('sdk_store_faults');
    closers.push(() => raw.close());
    const faults = new StoreFaults();
    const taskStore = new SdkTaskStore({ store: faults.wrap(raw), limits: { storeOutageMs: 0 } });
    const http = await serveSdk(
      () => userServer(taskStore),
      (t) => taskStore.bind(t),
    );
    closers.push(() => http.close());
    const client = await sdkClient(http.url, 'alice');
    closers.push(() => client.close());
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'later', arguments: { n: 1 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );

    for (const [method, work] of [
      ['get', () => client.experimental.tasks.getTask(task.taskId)],
      ['list', () => client.experimental.tasks.listTasks()],
      ['cancel', () => client.experimental.tasks.cancelTask(task.taskId)],
    ] as const) {
      faults.arm(method);
      const error = await work().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, method).toBeInstanceOf(McpError);
      const { code, data, message } = error as McpError;
      // The SDK's own tasks/list handler answers every error as invalid params, with its message.
      if (method === 'list') expect([code, message]).toEqual([-32602, expect.stringContaining('Store unavailable: retry later')]);
      else expect([code, data], method).toEqual([-32001, { retryAfterMs: 2000 }]);
      expect(message, method).not.toContain(FAULT_TEXT);
      faults.heal();
    }
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
  });
});
