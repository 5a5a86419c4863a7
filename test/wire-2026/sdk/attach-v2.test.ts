import { randomUUID } from 'node:crypto';
import { acceptedContent, createMcpHandler, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../../src/runtime/log.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { attachTasklatchV2, SdkV2Tasklatch, SUPPORTED_SDK_V2_RANGE, tasklatchWorkerV2 } from '../../../src/sdk-v2.js';
import { checkSdkV2, sdkV2Version } from '../../../src/wire-2026/sdk/sdk-internals.js';
import { WITH_TASKS } from '../../support/stateless.js';

const ELICIT = { ...WITH_TASKS, elicitation: {} };
const closing: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

function buildServer(): McpServer {
  const server = new McpServer({ name: 'attach-v2-test', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  // Asks through returned input_required results, two rounds, then answers with what it was told.
  server.registerTool('confirm', { description: 'Asks twice, then answers', inputSchema: z.object({ file: z.string() }) }, async ({ file }, ctx) => {
    const sure = acceptedContent(ctx.mcpReq.inputResponses, 'sure', z.object({ ok: z.boolean() }));
    if (sure === undefined)
      return inputRequired({ inputRequests: { sure: inputRequired.elicit({ message: `Delete ${file}?`, requestedSchema: z.object({ ok: z.boolean() }) }) } });
    const why = acceptedContent(ctx.mcpReq.inputResponses, 'why', z.object({ reason: z.string() }));
    if (why === undefined)
      return inputRequired({ inputRequests: { why: inputRequired.elicit({ message: 'Why?', requestedSchema: z.object({ reason: z.string() }) }) } });
    return { content: [{ type: 'text', text: `${file}: ${String(sure.ok)} (${why.reason})` }] };
  });
  server.registerTool('plain', { description: 'Not a task' }, async () => ({ content: [{ type: 'text', text: 'plain' }] }));
  return server;
}

async function serving(options: { execute?: boolean } = {}) {
  const store = new MemoryStore();
  const tasklatch = new SdkV2Tasklatch(buildServer(), {
    store,
    tasks: { echo: 'required', confirm: 'optional' },
    worker: { pollMs: 20 },
    logger: createLogger('silent'),
    ...options,
  });
  await tasklatch.start();
  const handler = createMcpHandler(() => tasklatch.attach(buildServer()), { legacy: 'stateless' });
  closing.push(async () => (await handler.close(), await tasklatch.close(), await store.close()));
  return { store, tasklatch, handler };
}

type Reply = { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

async function rpc(
  handler: ReturnType<typeof createMcpHandler>,
  method: string,
  params: Record<string, unknown>,
  options: { capabilities?: Record<string, unknown>; client?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const name = method === 'tools/call' ? params.name : params.taskId;
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? WITH_TASKS };
  const request = new Request('http://127.0.0.1/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...options.headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params: { ...params, _meta: meta } }),
  });
  const authInfo = { token: 'x', clientId: options.client ?? 'alice', scopes: [] };
  return (await (await handler.fetch(request, { authInfo })).json()) as Reply;
}

async function until(handler: ReturnType<typeof createMcpHandler>, taskId: string, done: (task: Record<string, unknown>) => boolean) {
  const end = Date.now() + 30_000;
  for (;;) {
    const task = (await rpc(handler, 'tasks/get', { taskId })).result!;
    if (done(task)) return task;
    if (Date.now() > end) throw new Error(`task ${taskId}: ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('attachTasklatchV2: the supported range and the refusals', () => {
  it('accepts the installed SDK and refuses other versions with one line', () => {
    expect(SUPPORTED_SDK_V2_RANGE).toBe('>=2.3.0 <3');
    expect(() => checkSdkV2(buildServer(), sdkV2Version())).not.toThrow();
    for (const version of ['2.2.0', '3.0.0', '2.4.0-beta.1', '1.32.2'])
      expect(() => checkSdkV2(buildServer(), version)).toThrow(
        `cannot attach tasklatch: @modelcontextprotocol/server ${version} is not supported (supported: >=2.3.0 <3)`,
      );
    expect(() => checkSdkV2(buildServer(), 'not installed')).toThrow(
      'cannot attach tasklatch: @modelcontextprotocol/server is not installed (supported: >=2.3.0 <3)',
    );
    expect(() => checkSdkV2({ server: {} } as never)).toThrow(
      /^cannot attach tasklatch: this McpServer does not have the shape of @modelcontextprotocol\/server/,
    );
  });

  it('refuses no marked tool, an unknown one, a wrong support, and a connected server', async () => {
    const store = new MemoryStore();
    expect(() => attachTasklatchV2(buildServer(), { store, tasks: {} })).toThrow('cannot attach tasklatch: no tool is marked as a task tool (options.tasks)');
    expect(() => attachTasklatchV2(buildServer(), { store, tasks: { nope: 'required' } })).toThrow(
      'cannot attach tasklatch: no tool nope is registered on this server',
    );
    expect(() => attachTasklatchV2(buildServer(), { store, tasks: { echo: 'forbidden' as never } })).toThrow(
      'cannot attach tasklatch: tool echo is marked "forbidden"; expected "required" or "optional"',
    );
    const tasklatch = tasklatchWorkerV2(buildServer(), { store, tasks: { echo: 'required' }, logger: createLogger('silent') });
    const other = new McpServer({ name: 'other', version: '1.0.0' });
    expect(() => tasklatch.attach(other)).toThrow('cannot attach tasklatch: no tool echo is registered on this server');
    const attached = tasklatch.attach(buildServer());
    expect(() => tasklatch.attach(attached)).toThrow('cannot attach tasklatch: the server already serves tasks/get; tasklatch serves tasks/* itself');
  });
});

describe('attachTasklatchV2 on createMcpHandler (2026-07-28)', () => {
  it('a marked tool becomes a task stored before the reply; other tools stay the SDK’s', async () => {
    const { handler, store } = await serving();
    const created = (await rpc(handler, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })).result!;
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    expect(created).not.toHaveProperty('content');
    expect(await store.get({ authKey: 'alice/alice', taskId: created.taskId as string, now: Date.now() })).not.toBeNull();
    const done = await until(handler, created.taskId as string, (t) => t.status === 'completed');
    expect(done.result).toMatchObject({ content: [{ type: 'text', text: 'hi' }] });
    expect((await rpc(handler, 'tools/call', { name: 'plain', arguments: {} })).result).toMatchObject({ resultType: 'complete', content: [{ text: 'plain' }] });
  });

  it('an idempotency key returns the same task; another caller sees it as unknown', async () => {
    const { handler } = await serving();
    const call = (client: string) =>
      rpc(handler, 'tools/call', { name: 'echo', arguments: { text: 'once' } }, { client, headers: { 'idempotency-key': 'k-1' } });
    const first = (await call('alice')).result!;
    expect((await call('alice')).result?.taskId).toBe(first.taskId);
    expect((await call('bob')).result?.taskId).not.toBe(first.taskId);
    const unknown = await rpc(handler, 'tasks/get', { taskId: randomUUID() }, { client: 'bob' });
    const foreign = await rpc(handler, 'tasks/get', { taskId: first.taskId }, { client: 'bob' });
    expect(foreign.error).toEqual(unknown.error);
    expect(foreign.error?.code).toBe(-32602);
    expect((await rpc(handler, 'tasks/cancel', { taskId: first.taskId }, { client: 'bob' })).error).toEqual(unknown.error);
  });

  it('a returned input_required is a durable question: tasks/get shows it, tasks/update answers it, round after round', async () => {
    const { handler } = await serving();
    const created = (await rpc(handler, 'tools/call', { name: 'confirm', arguments: { file: 'a.txt' } }, { capabilities: ELICIT })).result!;
    const id = created.taskId as string;
    const answer = async (key: string, content: Record<string, unknown>) => {
      const asking = await until(handler, id, (t) => t.status === 'input_required');
      expect(Object.keys(asking.inputRequests as object)).toEqual([key]);
      expect(asking.inputRequests).toMatchObject({ [key]: { method: 'elicitation/create' } });
      const ack = await rpc(handler, 'tasks/update', { taskId: id, inputResponses: { [key]: { action: 'accept', content } } });
      expect(ack.error).toBeUndefined();
      expect(ack.result?.resultType).toBe('complete');
    };
    await answer('sure', { ok: true });
    await answer('why', { reason: 'old' });
    const done = await until(handler, id, (t) => t.status === 'completed');
    expect(done.result).toMatchObject({ content: [{ type: 'text', text: 'a.txt: true (old)' }] });
  });

  it('an optional tool called without the extension runs plainly, its questions asked in the call’s own rounds', async () => {
    const { handler } = await serving();
    const plainly = { capabilities: { elicitation: {} } };
    const first = (await rpc(handler, 'tools/call', { name: 'confirm', arguments: { file: 'b.txt' } }, plainly)).result!;
    expect(first).toMatchObject({ resultType: 'input_required', inputRequests: { sure: { method: 'elicitation/create' } } });
    const again = async (state: unknown, inputResponses: Record<string, unknown>) =>
      (await rpc(handler, 'tools/call', { name: 'confirm', arguments: { file: 'b.txt' }, requestState: state, inputResponses }, plainly)).result!;
    const second = await again(first.requestState, { sure: { action: 'accept', content: { ok: false } } });
    expect(second).toMatchObject({ resultType: 'input_required', inputRequests: { why: {} } });
    const third = await again(second.requestState, { why: { action: 'accept', content: { reason: 'kept' } } });
    expect(third).toMatchObject({ resultType: 'complete', content: [{ text: 'b.txt: false (kept)' }] });
    // A state that was not issued for this call is refused.
    expect((await rpc(handler, 'tools/call', { name: 'confirm', arguments: { file: 'c.txt' }, requestState: second.requestState }, plainly)).error?.code).toBe(
      -32602,
    );
  });

  it('refuses what the extension forbids: tasks/* and a required tool without it (-32021)', async () => {
    const { handler } = await serving();
    const plain = await rpc(handler, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { capabilities: {} });
    expect(plain.error?.code).toBe(-32021);
    expect((await rpc(handler, 'tasks/get', { taskId: randomUUID() }, { capabilities: {} })).error?.code).toBe(-32021);
  });

  it('a task admitted by a server without a worker runs on a tasklatchWorkerV2 over the same store', async () => {
    const { handler, store } = await serving({ execute: false });
    const worker = tasklatchWorkerV2(buildServer(), { store, tasks: { echo: 'required' }, worker: { pollMs: 20 }, logger: createLogger('silent') });
    await worker.start();
    closing.push(() => worker.close());
    const created = (await rpc(handler, 'tools/call', { name: 'echo', arguments: { text: 'elsewhere' } })).result!;
    const done = await until(handler, created.taskId as string, (t) => t.status === 'completed');
    expect(done.result).toMatchObject({ content: [{ text: 'elsewhere' }] });
  });

  it('on the 2025-11-25 leg of the same handler, a marked tool is refused, not run inline', async () => {
    const { handler } = await serving();
    const request = new Request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }),
    });
    const text = await (await handler.fetch(request)).text();
    expect(text).toContain('runs as a task on protocol revision 2026-07-28 only');
  });
});
