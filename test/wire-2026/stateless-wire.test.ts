import { existsSync } from 'node:fs';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { Principal } from '../../src/tools/principal.js';
import { listen, readEvents, rpc, settle, WITH_TASKS } from '../support/stateless.js';
import { until } from '../support/until.js';

const ALICE = { token: 'token-alice' };
const BOB = { token: 'token-bob' };
let server: TaskServer;
let http: RunningHttp;
let url: string;
let exportsDir: string;

beforeAll(async () => {
  exportsDir = await mkdtemp(join(tmpdir(), 'tasklatch-2026-'));
  server = createTaskServer({
    store: new MemoryStore(),
    tools: demoTools({ exportsDir }),
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: createLogger('silent'),
  });
  await server.start();
  const tokens = new Map<string, Principal>([
    ['token-alice', { tenant: 'acme', subject: 'alice' }],
    ['token-bob', { tenant: 'globex', subject: 'bob' }],
  ]);
  http = await startHttpServer({ runtime: server.runtime, taskServer: server, host: '127.0.0.1', port: 0, tokens });
  url = http.url;
});

afterAll(async () => {
  await http.close();
  await server.close();
});

describe('the 2026-07-28 wire', () => {
  it('discovers the tasks extension and lists tools without taskSupport', async () => {
    const discovered = await rpc(url, 'server/discover', {}, ALICE);
    expect(discovered.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } },
      cacheScope: 'public',
    });
    expect(discovered.result?.capabilities).not.toHaveProperty('tasks');
    const listed = await rpc(url, 'tools/list', {}, ALICE);
    const tools = listed.result?.tools as Array<Record<string, unknown>>;
    expect(tools.map((t) => t.name)).toEqual(['export_ledger', 'summarize', 'lookup']);
    expect(tools.every((t) => !('execution' in t))).toBe(true);
  });

  it('runs export_ledger as a task: durable at once, then completed with the result inlined', async () => {
    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 40 } }, ALICE);
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000, pollIntervalMs: 1000 });
    for (const absent of ['task', 'result', 'error', 'inputRequests', 'ttl', 'pollInterval']) expect(created.result).not.toHaveProperty(absent);
    const taskId = created.result!.taskId as string;
    expect((await rpc(url, 'tasks/get', { taskId }, ALICE)).result?.taskId).toBe(taskId);
    const done = await settle(url, taskId, ALICE);
    expect(done).toMatchObject({ resultType: 'complete', status: 'completed', result: { resultType: 'complete', structuredContent: { rows: 40 } } });
    expect((done.result as { _meta?: unknown })._meta).toBeUndefined();
  });

  it('reads an isError result completed here and failed on 2025-11-25, from one stored outcome', async () => {
    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-13' } }, ALICE);
    const taskId = created.result!.taskId as string;
    expect(await settle(url, taskId, ALICE)).toMatchObject({ status: 'completed', result: { isError: true } });
    const legacy = new Client({ name: 'legacy', version: '1.0.0' });
    await legacy.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer token-alice' } } }));
    try {
      expect((await legacy.experimental.tasks.getTask(taskId)).status).toBe('failed');
      expect((await legacy.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).isError).toBe(true);
    } finally {
      await legacy.close();
    }
  });

  it('runs a tool plainly when the request cannot take a task, and refuses a required one with -32021', async () => {
    const plain = await rpc(url, 'tools/call', { name: 'summarize', arguments: { month: '2026-06' } }, { ...ALICE, capabilities: {} });
    expect(plain.result).toMatchObject({ resultType: 'complete', structuredContent: { month: '2026-06' } });
    const refused = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06' } }, { ...ALICE, capabilities: {} });
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } });
    // A legacy params.task never turns a plain tool into a task.
    const legacyHint = await rpc(url, 'tools/call', { name: 'lookup', arguments: { account: 'cash' }, task: { ttl: 1000 } }, ALICE);
    expect(legacyHint.result).toMatchObject({ resultType: 'complete' });
    expect(legacyHint.result).not.toHaveProperty('taskId');
  });

  it('replays a retried idempotency key (meta or header) and refuses it for another request', async () => {
    const key = { 'io.tasklatch/idempotency-key': 'june-export' };
    const call = { name: 'export_ledger', arguments: { month: '2026-06', rows: 5 } };
    const first = await rpc(url, 'tools/call', call, { ...ALICE, meta: key });
    const again = await rpc(url, 'tools/call', call, { ...ALICE, headers: { 'idempotency-key': 'june-export' } });
    expect(again.result?.taskId).toBe(first.result?.taskId);
    const other = await rpc(url, 'tools/call', { ...call, arguments: { month: '2026-05' } }, { ...ALICE, meta: key });
    expect(other.error?.code).toBe(-32602);
    // Keys are scoped by caller: bob's same key is his own task.
    const bobs = await rpc(url, 'tools/call', call, { ...BOB, meta: key });
    expect(bobs.result?.taskId).not.toBe(first.result?.taskId);
  });

  it('cancels with an empty ack, also for a terminal task, and leaves no export behind', async () => {
    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 100, delayMs: 5000 } }, ALICE);
    const taskId = created.result!.taskId as string;
    const ack = await rpc(url, 'tasks/cancel', { taskId }, ALICE);
    expect(ack.result).toEqual({ resultType: 'complete' });
    expect(await settle(url, taskId, ALICE)).toMatchObject({ status: 'cancelled' });
    expect((await rpc(url, 'tasks/cancel', { taskId }, ALICE)).result).toEqual({ resultType: 'complete' });
    // Whatever the aborted handler had written, it removes (left alone, it would publish its file).
    await until(async () =>
      (existsSync(join(exportsDir, 'acme')) ? await readdir(join(exportsDir, 'acme')) : []).some((f) => f.includes(taskId)) ? undefined : true,
    );
  });

  it('answers another tenant’s task id exactly like an unknown one, on every tasks method', async () => {
    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 5 } }, ALICE);
    const taskId = created.result!.taskId as string;
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const params = method === 'tasks/update' ? { inputResponses: {} } : {};
      const foreign = await rpc(url, method, { taskId, ...params }, BOB);
      const unknown = await rpc(url, method, { taskId: 'no-such-task', ...params }, BOB);
      expect([foreign.status, foreign.error], method).toEqual([unknown.status, unknown.error]);
      expect(foreign.error?.code).toBe(-32602);
    }
    expect((await settle(url, taskId, ALICE)).status).toBe('completed');
  });

  it('checks the request before its method: _meta, headers, version, then the method', async () => {
    const missingMeta = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'server/discover',
        authorization: 'Bearer token-alice',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'server/discover', params: {} }),
    });
    expect(missingMeta.status).toBe(400);
    expect(await missingMeta.json()).toMatchObject({ id: 7, error: { code: -32602 } });
    const cases: Array<[string, Parameters<typeof rpc>[3], number, number]> = [
      ['no MCP-Protocol-Version', { headers: { 'mcp-protocol-version': null } }, 400, -32020],
      ['Mcp-Method differs', { headers: { 'mcp-method': 'tools/call' } }, 400, -32020],
      [
        'unsupported version',
        { headers: { 'mcp-protocol-version': '2099-01-01' }, meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
        400,
        -32022,
      ],
    ];
    for (const [name, options, status, code] of cases) {
      const out = await rpc(url, 'server/discover', {}, { ...ALICE, ...options });
      expect([out.status, out.error?.code], name).toEqual([status, code]);
    }
    const wrongName = await rpc(url, 'tasks/get', { taskId: 'a' }, { ...ALICE, headers: { 'mcp-name': 'b' } });
    expect([wrongName.status, wrongName.error?.code]).toEqual([400, -32020]);
    for (const method of ['tasks/result', 'tasks/list', 'initialize', 'ping']) {
      const out = await rpc(url, method, {}, ALICE);
      expect([out.status, out.error?.code], method).toEqual([404, -32601]);
    }
    const undeclared = await rpc(url, 'tasks/get', { taskId: 'x' }, { ...ALICE, capabilities: {} });
    expect([undeclared.status, undeclared.error?.code]).toEqual([400, -32021]);
  });

  it('refuses malformed envelopes with the JSON-RPC codes and never an id of null', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', authorization: 'Bearer token-alice', ...headers },
        body,
      });
    const garbage = await post('{not json');
    expect(garbage.status).toBe(400);
    const parsed = (await garbage.json()) as Record<string, unknown>;
    expect(parsed).toMatchObject({ error: { code: -32700 } });
    expect(parsed).not.toHaveProperty('id');
    const batch = await post('[]');
    expect([batch.status, ((await batch.json()) as { error: { code: number } }).error.code]).toEqual([400, -32600]);
    const notification = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }));
    expect(notification.status).toBe(202);
    const get = await fetch(url, { headers: { 'mcp-protocol-version': '2026-07-28', authorization: 'Bearer token-alice' } });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
  });

  it('refuses a foreign Host or Origin on a loopback listener with 403 (DNS rebinding)', async () => {
    const { port } = new URL(url);
    // fetch will not send a Host of our choosing; node:http will.
    const statusWith = (headers: Record<string, string>) =>
      new Promise<number | undefined>((resolve, reject) => {
        const req = request(
          url,
          { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer token-alice', ...headers } },
          (res) => {
            res.resume();
            resolve(res.statusCode);
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
    expect(await statusWith({ host: 'evil.example.com' })).toBe(403);
    expect(await statusWith({ host: `evil.example.com:${port}`, origin: 'http://evil.example.com' })).toBe(403);
    expect(await statusWith({ host: `127.0.0.1:${port}`, origin: 'http://evil.example.com' })).toBe(403);
    expect((await rpc(url, 'server/discover', {}, { ...ALICE, headers: { origin: `http://localhost:${port}` } })).status).toBe(200);
  });

  it('streams notifications/tasks for the caller’s own tasks on subscriptions/listen', async () => {
    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 40, delayMs: 300 } }, ALICE);
    const taskId = created.result!.taskId as string;
    const { res, abort } = await listen(url, 'token-alice', [taskId, 'not-a-task'], 'listen-1');
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const messages = await readEvents(res, abort, (got) => got.some((m) => m.params.status === 'completed'));
    expect(messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
    const updates = messages.slice(1);
    expect(updates.every((m) => m.method === 'notifications/tasks' && m.params.taskId === taskId)).toBe(true);
    expect(updates.every((m) => (m.params._meta as Record<string, unknown>)['io.modelcontextprotocol/subscriptionId'] === 'listen-1')).toBe(true);
    expect(updates.at(-1)?.params).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 40 } } });
  });

  it('asks for input durably: tasks/get shows the question, tasks/update answers it, and only the owner can', async () => {
    const created = await rpc(
      url,
      'tools/call',
      { name: 'export_ledger', arguments: { month: '2026-11', rows: 12, confirm: true } },
      { ...ALICE, capabilities: { ...WITH_TASKS, elicitation: {} } },
    );
    const taskId = created.result!.taskId as string;
    let waiting: Record<string, unknown> | undefined;
    for (let i = 0; i < 200 && waiting?.status !== 'input_required'; i++) {
      waiting = (await rpc(url, 'tasks/get', { taskId }, ALICE)).result;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(waiting).toMatchObject({
      status: 'input_required',
      inputRequests: { 'confirm-export': { method: 'elicitation/create', params: { message: "Export 12 rows of acme's ledger for 2026-11?" } } },
    });
    // Another tenant's answer is refused like an unknown id and changes nothing.
    const bobs = await rpc(url, 'tasks/update', { taskId, inputResponses: { 'confirm-export': { action: 'accept', content: { confirm: true } } } }, BOB);
    expect(bobs.error).toEqual({ code: -32602, message: 'Task not found' });
    const malformed = await rpc(url, 'tasks/update', { taskId, inputResponses: { 'confirm-export': 12345 } }, ALICE);
    expect(malformed.error?.code).toBe(-32602);
    const ack = await rpc(
      url,
      'tasks/update',
      { taskId, inputResponses: { 'confirm-export': { action: 'accept', content: { confirm: true } }, stray: {} } },
      ALICE,
    );
    expect(ack.result).toEqual({ resultType: 'complete' });
    expect(await settle(url, taskId, ALICE)).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 12 } } });
  });

  it('refuses a multi-round request state it did not issue, before the tool runs', async () => {
    const askName = { name: 'summarize', arguments: { month: '2026-06' } };
    // summarize asks nothing; the round state is checked before the tool runs, whatever it is.
    const forged = await rpc(url, 'tools/call', { ...askName, requestState: 'e30.AAAA' }, { ...BOB, capabilities: {} });
    expect(forged.error?.code).toBe(-32602);
  });
});
