import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { Principal } from '../../src/tools/principal.js';
import { rpc } from '../support/stateless.js';

// Tasks for clients that have none: an SDK client that declares no task capability calls a
// `required` tool, gets the task id as text, and follows the same record with the task tools.

const tokens = new Map<string, Principal>([
  ['alice', { tenant: 'acme', subject: 'alice' }],
  ['bob', { tenant: 'globex', subject: 'bob' }],
]);

interface Running {
  store: TaskStore;
  runtime: TaskRuntime;
  server: TaskServer;
  http: RunningHttp;
}

async function serve(taskTools: boolean): Promise<Running> {
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-task-tools-'));
  const store = await SqliteStore.open(join(dir, 'tasks.db'));
  const runtime = createRuntime({ store, tools: demoTools({ exportsDir: dir }), taskTools, callersIdentified: true, logger: createLogger('silent') });
  const server = createTaskServer({ runtime, authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null });
  await runtime.start();
  await server.start();
  const http = await startHttpServer({ runtime: server.runtime, taskServer: server, host: '127.0.0.1', port: 0, tokens });
  return { store, runtime, server, http };
}

async function plainClient(url: string, token: string, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'plain', version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

const textOf = (result: { content?: unknown }) => (result.content as Array<{ text?: string }>)[0]?.text ?? '';
const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as {
    content: unknown;
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
  };

let on: Running;
let off: Running;
const clients: Client[] = [];

beforeAll(async () => {
  [on, off] = await Promise.all([serve(true), serve(false)]);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  for (const r of [on, off]) {
    await r.http.close();
    await r.server.close();
    await r.runtime.close();
    await r.store.close();
  }
});

async function connect(url: string, token: string, capabilities?: Record<string, unknown>) {
  const client = await plainClient(url, token, capabilities);
  clients.push(client);
  return client;
}

async function settle(client: Client, taskId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const got = await call(client, 'task_status', { taskId });
    const status = got.structuredContent?.status;
    if (status === 'completed' || status === 'failed' || status === 'cancelled') return got.structuredContent!;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`task ${taskId} did not settle`);
}

describe('--task-tools: a client without task support', () => {
  it('lists the task tools only when they are on', async () => {
    const names = async (url: string) => (await (await connect(url, 'alice')).listTools()).tools.map((t) => t.name);
    expect(await names(on.http.url)).toEqual(['export_ledger', 'summarize', 'lookup', 'task_status', 'task_result', 'task_cancel']);
    expect(await names(off.http.url)).toEqual(['export_ledger', 'summarize', 'lookup']);
  });

  it('lists a required tool without execution to it (so that an SDK client calls it plainly), and as required to a task client', async () => {
    const support = async (capabilities?: Record<string, unknown>) =>
      (await (await connect(on.http.url, 'alice', capabilities)).listTools()).tools.find((t) => t.name === 'export_ledger')?.execution;
    expect(await support()).toBeUndefined();
    expect(await support({ tasks: { requests: { tools: { call: {} } } } })).toEqual({ taskSupport: 'required' });
    // The SDK client checks what it listed before sending: the plain call goes through.
    const alice = await connect(on.http.url, 'alice');
    await alice.listTools();
    expect(textOf(await call(alice, 'export_ledger', { month: '2026-06', rows: 1 }))).toMatch(/^Started task /);
  });

  it('gets the task at once as text, follows it to its result, and the record is the one tasks/get reads', async () => {
    const alice = await connect(on.http.url, 'alice');
    const started = await call(alice, 'export_ledger', { month: '2026-06', rows: 20, delayMs: 200 });
    expect(started.isError).toBeUndefined();
    const taskId = started.structuredContent?.taskId as string;
    expect(textOf(started)).toContain(`Started task ${taskId} (working)`);
    expect(textOf(started)).toContain(`task_status with {"taskId":"${taskId}"}`);
    expect(await settle(alice, taskId)).toMatchObject({ taskId, status: 'completed' });
    const result = await call(alice, 'task_result', { taskId });
    expect(result.structuredContent).toMatchObject({ rows: 20 });
    // The same record as a task-capable client of the same caller sees it.
    const tasksClient = await connect(on.http.url, 'alice', { tasks: { requests: { tools: { call: {} } } } });
    expect((await tasksClient.experimental.tasks.getTask(taskId)).status).toBe('completed');
  });

  it('keeps the tenant boundary: another caller learns nothing and cancels nothing', async () => {
    const alice = await connect(on.http.url, 'alice');
    const bob = await connect(on.http.url, 'bob');
    const taskId = (await call(alice, 'export_ledger', { month: '2026-06', rows: 5, delayMs: 3000 })).structuredContent?.taskId as string;
    for (const name of ['task_status', 'task_result', 'task_cancel']) {
      const answer = await call(bob, name, { taskId });
      expect(answer).toMatchObject({ isError: true });
      expect(textOf(answer)).toBe(`Task ${taskId} not found`);
    }
    expect((await call(alice, 'task_status', { taskId })).structuredContent?.status).toBe('working');
    expect(textOf(await call(alice, 'task_result', { taskId }))).toMatch(/is working( \(.*\))?\. No result yet\./);
    const cancelled = await call(alice, 'task_cancel', { taskId });
    expect(cancelled.structuredContent?.status).toBe('cancelled');
    expect(await call(alice, 'task_result', { taskId })).toMatchObject({ isError: true, content: [{ text: `Task ${taskId} was cancelled` }] });
    expect(textOf(await call(alice, 'task_cancel', { taskId }))).toBe(`Task ${taskId} is already cancelled and cannot be cancelled`);
  });

  it('refuses bad arguments before anything is stored, and a task-capable client still gets -32601 for a plain call', async () => {
    const alice = await connect(on.http.url, 'alice');
    const before = await on.store.pendingDispatch();
    await expect(call(alice, 'export_ledger', { month: 12 })).rejects.toThrow(/-32602/);
    expect(await on.store.pendingDispatch()).toBe(before);
    const tasksClient = await connect(on.http.url, 'alice', { tasks: { requests: { tools: { call: {} } } } });
    await expect(call(tasksClient, 'export_ledger', { month: '2026-06' })).rejects.toThrow(/-32601/);
  });

  it('without the option, a plain call of a required tool is refused as before', async () => {
    const alice = await connect(off.http.url, 'alice');
    await expect(call(alice, 'export_ledger', { month: '2026-06' })).rejects.toThrow(/-32601/);
    await expect(call(alice, 'task_status', { taskId: 'x' })).rejects.toThrow(/Unknown tool/);
  });

  it('on 2026-07-28, a request without the tasks extension gets a complete result naming the task', async () => {
    const reply = await rpc(
      on.http.url,
      'tools/call',
      { name: 'export_ledger', arguments: { month: '2026-06', rows: 3 } },
      { capabilities: {}, token: 'alice' },
    );
    expect(reply.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'working' } });
    const taskId = (reply.result?.structuredContent as { taskId: string }).taskId;
    expect((await settle(await connect(on.http.url, 'alice'), taskId)).status).toBe('completed');
    const refused = await rpc(off.http.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06' } }, { capabilities: {}, token: 'alice' });
    expect(refused.error?.code).toBe(-32021);
  });
});
