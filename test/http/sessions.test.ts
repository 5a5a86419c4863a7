import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { Principal } from '../../src/tools/principal.js';
import { callAsTask } from '../support/mcp.js';
import { until } from '../support/until.js';

let server: TaskServer;
let http: RunningHttp;

beforeAll(async () => {
  server = createTaskServer({
    store: new MemoryStore(),
    tools: demoTools({ exportsDir: await mkdtemp(join(tmpdir(), 'tasklatch-sessions-')) }),
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: createLogger('silent'),
  });
  await server.start();
  const tokens = new Map<string, Principal>([
    ['token-alice', { tenant: 'acme', subject: 'alice' }],
    ['token-bob', { tenant: 'globex', subject: 'bob' }],
  ]);
  http = await startHttpServer({ runtime: server.runtime, taskServer: server, host: '127.0.0.1', port: 0, tokens });
});

afterAll(async () => {
  await http.close();
  await server.close();
});

async function alice(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: { Authorization: 'Bearer token-alice' } } });
  const client = new Client({ name: 'alice', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

function post(token: string, sessionId: string, body: unknown, signal?: AbortSignal) {
  return fetch(http.url, {
    method: 'POST',
    ...(signal === undefined ? {} : { signal }),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify(body),
  });
}

describe('2025-11-25 sessions over HTTP', () => {
  it('belong to the caller who opened them: another caller gets "Session not found" on POST, GET and DELETE', async () => {
    const { client, transport } = await alice();
    const sessionId = transport.sessionId!;
    const headers = {
      authorization: 'Bearer token-bob',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      accept: 'application/json, text/event-stream',
    };
    const asBob = [
      await post('token-bob', sessionId, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      await fetch(http.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } }),
      await fetch(http.url, { method: 'DELETE', headers }),
    ];
    for (const res of asBob) {
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: -32001, message: 'Session not found' } });
    }
    // The session is untouched for its owner.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });

  it('refuses a second request with the id of one still in flight, and answers the first', async () => {
    const { client, transport } = await alice();
    const sessionId = transport.sessionId!;
    // A task that runs until it is cancelled holds tasks/result open as long as the test needs.
    const created = await callAsTask(client, 'export_ledger', { month: '2026-06', rows: 10, delayMs: 600_000 });
    const watching = server.runtime.guard.context.changes.watchers;
    const held = post('token-alice', sessionId, { jsonrpc: '2.0', id: 77, method: 'tasks/result', params: { taskId: created.task.taskId } });
    // The held request waits for the task's end.
    await until(() => (server.runtime.guard.context.changes.watchers > watching ? true : undefined));
    const twin = await post('token-alice', sessionId, { jsonrpc: '2.0', id: 77, method: 'tools/list', params: {} });
    expect(twin.status).toBe(409);
    expect(await twin.json()).toMatchObject({ id: 77, error: { code: -32600 } });
    await client.experimental.tasks.cancelTask(created.task.taskId);
    const first = await held;
    expect(await first.text()).toContain('"id":77');
    // Once answered, the id may be used again.
    expect((await post('token-alice', sessionId, { jsonrpc: '2.0', id: 77, method: 'tools/list', params: {} })).status).toBe(200);
    await client.close();
  });
});
