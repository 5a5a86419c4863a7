import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { demoTools } from '../../src/demo/demo-tools.js';
import { createLogger } from '../../src/runtime/log.js';
import { createTaskServer } from '../../src/wire-2025/server.js';
import { ProtocolError } from '../../src/tools/protocol-error.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { ALICE, BOB, callAsTask, callPlain, memoryServer, rpcError } from '../support/mcp.js';
import { until } from '../support/until.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});
async function setup(options: Parameters<typeof memoryServer>[0] = {}) {
  const s = await memoryServer(options);
  cleanups.push(() => s.server.close());
  return s;
}

const RESULT_META = 'io.modelcontextprotocol/related-task';

describe('negotiation', () => {
  it('declares tasks.list, cancel and requests.tools.call with authentication', async () => {
    const { connect } = await setup();
    const client = await connect();
    expect(client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => [t.name, t.execution?.taskSupport])).toEqual([
      ['export_ledger', 'required'],
      ['summarize', 'optional'],
      ['lookup', undefined],
    ]);
    expect(tools[0]?.inputSchema).toMatchObject({ type: 'object', properties: { month: { type: 'string' } }, required: ['month'] });
  });

  it('offers no tasks/list without an auth context', async () => {
    const anonymous = createTaskServer({ store: new MemoryStore(), tools: demoTools({ exportsDir: '/nonexistent' }), logger: createLogger('silent') });
    expect(anonymous.capabilities).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    const bare = createTaskServer({ store: new MemoryStore(), tools: [], logger: createLogger('silent') });
    expect(bare.capabilities).toEqual({ cancel: {} });
    await Promise.all([anonymous.close(), bare.close()]);
  });

  it('answers -32601 for a plain call of a required tool and a task call of a forbidden one, creating nothing', async () => {
    const { connect } = await setup();
    const client = await connect();
    expect(await rpcError(callPlain(client, 'export_ledger', { month: '2026-06' }))).toMatchObject({ code: -32601 });
    expect(await rpcError(callAsTask(client, 'lookup', { account: 'a' }))).toMatchObject({ code: -32601 });
    expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it('answers -32602 for an unknown tool and for invalid arguments of a task call, creating nothing', async () => {
    const { connect } = await setup();
    const client = await connect();
    expect(await rpcError(callAsTask(client, 'nope', {}))).toMatchObject({ code: -32602, message: 'Unknown tool: nope' });
    expect(await rpcError(callAsTask(client, 'export_ledger', { month: 7 }))).toMatchObject({ code: -32602 });
    expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
    const plain = await callPlain(client, 'summarize', { month: 7 });
    expect(plain.isError).toBe(true);
  });
});

describe('task lifecycle', () => {
  it('runs export_ledger as a task: working, then completed with a file of the stated SHA-256', async () => {
    const { connect } = await setup();
    const client = await connect();
    const statuses: string[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params.status));
    const created = await callAsTask(client, 'export_ledger', { month: '2026-06', rows: 200, delayMs: 100 }, { ttl: 60_000 });
    expect(created.task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 1000 });
    expect(Date.parse(created.task.createdAt)).toBeGreaterThan(0);
    const polled = await client.experimental.tasks.getTask(created.task.taskId);
    expect(polled.taskId).toBe(created.task.taskId);
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result._meta?.[RESULT_META]).toEqual({ taskId: created.task.taskId });
    const content = result.structuredContent as { file: string; rows: number; sha256: string };
    expect(content.rows).toBe(200);
    const bytes = await readFile(content.file);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(content.sha256);
    expect(bytes.toString().split('\n')).toHaveLength(202);
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('completed');
    await until(() => (statuses.at(-1) === 'completed' ? true : undefined));
  });

  it('ends a task failed when the tool returns isError (invalid month)', async () => {
    const { connect } = await setup();
    const client = await connect();
    const created = await callAsTask(client, 'export_ledger', { month: '2026-13' });
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('YYYY-MM') });
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('failed');
  });

  it('ends a task failed with the JSON-RPC error a tool throws, and tasks/result answers that error', async () => {
    const refusing = defineTool({
      name: 'refusing',
      description: 'ends its call with a JSON-RPC error',
      inputSchema: z.object({}),
      execution: { taskSupport: 'optional' },
      handler: async () => {
        throw new ProtocolError(-32042, 'upstream refused the export', { upstream: 'ledger' });
      },
    }) as unknown as TaskTool;
    const { connect } = await setup({ extraTools: [refusing] });
    const client = await connect();
    const created = await callAsTask(client, 'refusing', {});
    const error = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema).then(
      () => null,
      (e: unknown) => e as { code: number; message: string; data: unknown },
    );
    expect(error).toMatchObject({ code: -32042, message: expect.stringContaining('upstream refused the export'), data: { upstream: 'ledger' } });
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('failed');
    expect(await rpcError(callPlain(client, 'refusing', {}))).toEqual({ code: -32042, message: 'upstream refused the export' });
  });

  it('runs an optional tool plainly or as a task, and a bare tool plainly', async () => {
    const { connect } = await setup();
    const client = await connect();
    const plain = await callPlain(client, 'summarize', { month: '2026-06' });
    const task = await callAsTask(client, 'summarize', { month: '2026-06' });
    const viaTask = await client.experimental.tasks.getTaskResult(task.task.taskId, CallToolResultSchema);
    expect(viaTask.structuredContent).toEqual(plain.structuredContent);
    expect((await callPlain(client, 'lookup', { account: 'cash' })).content[0]).toMatchObject({ type: 'text' });
  });

  it('holds tasks/result open and releases it on the terminal write', async () => {
    let release = () => {};
    const gate = { promise: new Promise<void>((r) => (release = r)), resolve: () => release() };
    const gated = defineTool({
      name: 'gated',
      description: 'waits for the test',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async () => {
        await gate.promise;
        return { content: [{ type: 'text', text: 'released' }] };
      },
    }) as unknown as TaskTool;
    const { connect } = await setup({ extraTools: [gated] });
    const client = await connect();
    const created = await callAsTask(client, 'gated', {});
    let settled = false;
    const pending = client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);
    const t0 = performance.now();
    gate.resolve();
    const result = await pending;
    expect(result.content[0]).toMatchObject({ text: 'released' });
    // Released by the terminal write, not by the held request's own look, 30 s after it began.
    expect(performance.now() - t0).toBeLessThan(15_000);
  });

  it('sends progress with the original token until the task ends', async () => {
    const { connect } = await setup();
    const client = await connect();
    const seen: number[] = [];
    const created = await client.request(
      { method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-06', rows: 40, delayMs: 40 }, task: {} } },
      (await import('@modelcontextprotocol/sdk/types.js')).CreateTaskResultSchema,
      { onprogress: (p) => void seen.push(p.progress) },
    );
    await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.at(-1)).toBe(40);
  });
});

describe('idempotency', () => {
  it('returns the same task for a retried key and refuses the key for another request', async () => {
    const { connect } = await setup();
    const client = await connect();
    const first = await callAsTask(client, 'export_ledger', { month: '2026-06', rows: 5 }, { key: 'export-june' });
    const again = await callAsTask(client, 'export_ledger', { rows: 5, month: '2026-06' }, { key: 'export-june', ttl: 5 });
    expect(again.task.taskId).toBe(first.task.taskId);
    const other = await rpcError(callAsTask(client, 'export_ledger', { month: '2026-05' }, { key: 'export-june' }));
    expect(other).toEqual({ code: -32602, message: expect.stringContaining('"export-june"') });
    const bob = await callAsTask(await connect(BOB), 'export_ledger', { month: '2026-05' }, { key: 'export-june' });
    expect(bob.task.taskId).not.toBe(first.task.taskId);
  });
});

describe('tenancy', () => {
  it('hides a task from another tenant on every surface with one message', async () => {
    const { connect } = await setup({ limits: { pageSize: 1 } });
    const alice = await connect(ALICE);
    const bob = await connect(BOB);
    const a1 = await callAsTask(alice, 'summarize', { month: '2026-06' });
    await callAsTask(alice, 'summarize', { month: '2026-07' });
    const unknown = await rpcError(bob.experimental.tasks.getTask('no-such-task'));
    expect(unknown).toEqual({ code: -32602, message: 'Task not found' });
    for (const probe of [
      () => bob.experimental.tasks.getTask(a1.task.taskId),
      () => bob.experimental.tasks.getTaskResult(a1.task.taskId, CallToolResultSchema),
      () => bob.experimental.tasks.cancelTask(a1.task.taskId),
    ]) {
      expect(await rpcError(probe())).toEqual(unknown);
    }
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([]);
    const page = await alice.experimental.tasks.listTasks();
    expect(page.tasks).toHaveLength(1);
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(await rpcError(bob.experimental.tasks.listTasks(page.nextCursor))).toEqual({ code: -32602, message: 'Invalid cursor' });
    expect((await alice.experimental.tasks.listTasks(page.nextCursor)).tasks).toHaveLength(1);
  });

  it('treats an expired task as gone', async () => {
    let now = Date.now();
    const { connect } = await setup({ clock: () => now });
    const client = await connect();
    const created = await callAsTask(client, 'summarize', { month: '2026-06' }, { ttl: 1000 });
    await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    now += 1000;
    expect(await rpcError(client.experimental.tasks.getTask(created.task.taskId))).toEqual({ code: -32602, message: 'Task not found' });
    expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });
});

describe('cancellation', () => {
  it('stores cancelled before replying, aborts the handler, and never reports a late success', async () => {
    const { connect, exportsDir } = await setup();
    const client = await connect();
    const created = await callAsTask(client, 'export_ledger', { month: '2026-06', rows: 100, delayMs: 60_000 });
    // The handler has written its first part.
    await until(async () =>
      (await client.experimental.tasks.getTask(created.task.taskId)).statusMessage?.includes('rows written') === true ? true : undefined,
    );
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled.status).toBe('cancelled');
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringContaining('cancelled') }] });
    expect(await rpcError(client.experimental.tasks.cancelTask(created.task.taskId))).toMatchObject({ code: -32602 });
    // The aborted handler removes its parts (left alone, it would run for a minute and publish its file).
    const dir = join(exportsDir, 'acme');
    await until(() => ((existsSync(dir) ? readdirSync(dir) : []).length === 0 ? true : undefined));
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('cancelled');
  });
});

describe('limits', () => {
  it('refuses a task beyond the per-caller active limit with -32000, and clamps ttl to the maximum', async () => {
    const { connect } = await setup({ limits: { maxActiveTasks: 1, maxTtl: 5000 } });
    const client = await connect();
    const first = await callAsTask(client, 'export_ledger', { month: '2026-06', rows: 10, delayMs: 300 }, { ttl: 60_000 });
    expect(first.task.ttl).toBe(5000);
    expect(await rpcError(callAsTask(client, 'export_ledger', { month: '2026-07' }))).toEqual({ code: -32000, message: expect.stringContaining('at most 1') });
    expect((await callAsTask(await connect(BOB), 'summarize', { month: '2026-07' })).task.status).toBe('working');
    await client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema);
    expect((await callAsTask(client, 'summarize', { month: '2026-07' })).task.status).toBe('working');
  });
});

describe('malformed requests', () => {
  it('answer -32602 for a missing task id, a non-string cursor or a tools/call without a name; stray task params are ignored', async () => {
    const { connect } = await setup();
    const client = await connect();
    const { GetTaskResultSchema, ListTasksResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    expect(await rpcError(client.request({ method: 'tasks/get', params: {} }, GetTaskResultSchema))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('taskId'),
    });
    expect(await rpcError(client.request({ method: 'tasks/list', params: { cursor: 5 } }, ListTasksResultSchema))).toMatchObject({ code: -32602 });
    expect(await rpcError(client.request({ method: 'tools/call', params: { arguments: {} } }, CallToolResultSchema))).toMatchObject({ code: -32602 });
    const created = await callAsTask(client, 'summarize', { month: '2026-06' });
    const got = await client.request(
      {
        method: 'tasks/get',
        params: { taskId: created.task.taskId, task: { ttl: 1 }, _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'someone-else' } } },
      },
      GetTaskResultSchema,
    );
    expect(got.taskId).toBe(created.task.taskId);
  });
});
