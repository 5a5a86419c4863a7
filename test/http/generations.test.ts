import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type HttpOptions, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { rpc, settle } from '../support/stateless.js';
import { messageOf, postRaw } from '../support/wire-server.js';

const opened: Array<{ http?: RunningHttp; runtime: TaskRuntime }> = [];

afterEach(async () => {
  for (const { http, runtime } of opened.splice(0)) {
    await http?.close();
    await runtime.close();
  }
});

async function runtimeOf(): Promise<TaskRuntime> {
  const runtime = createRuntime({
    store: new MemoryStore(),
    tools: demoTools({ exportsDir: await mkdtemp(join(tmpdir(), 'tasklatch-generations-')) }),
    logger: createLogger('silent'),
  });
  await runtime.start();
  return runtime;
}

async function serve(options: Partial<HttpOptions> = {}): Promise<{ url: string; http: RunningHttp; runtime: TaskRuntime }> {
  const runtime = await runtimeOf();
  const entry: { http?: RunningHttp; runtime: TaskRuntime } = { runtime };
  opened.push(entry);
  const http = await startHttpServer({ runtime, host: '127.0.0.1', port: 0, ...options });
  entry.http = http;
  return { url: http.url, http, runtime };
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 7,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'generations-test', version: '1.0.0' } },
});

describe('startHttpServer over a runtime', () => {
  it('serves both generations from one runtime by default: a task of either is read through the other', async () => {
    const { url } = await serve();
    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 3 } });
    const taskId = created.result?.taskId as string;
    await settle(url, taskId);

    const client = new Client({ name: 'legacy', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task).toMatchObject({ taskId, status: 'completed' });
    await client.close();
  });

  it('serves 2026-07-28 alone: an initialize is answered -32022 naming what is served, and no session exists', async () => {
    const { url, http } = await serve({ generations: ['2026-07-28'] });
    const res = await postRaw(url, INITIALIZE);
    expect(res.status).toBe(400);
    expect(await messageOf(res)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32022, message: 'Unsupported protocol version: this endpoint serves 2026-07-28', data: { supported: ['2026-07-28'] } },
    });
    expect(http.openSessions()).toBe(0);
    // A request naming a session is the older generation's too.
    const named = await postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list' }), { 'mcp-session-id': 'abc' });
    expect(named.status).toBe(400);
    await named.text();

    const created = await rpc(url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 3 } });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    expect(await settle(url, created.result!.taskId as string)).toMatchObject({ status: 'completed' });
  });

  it('serves 2025-11-25 alone: a 2026-07-28 request is answered -32022, an SDK client works', async () => {
    const { url } = await serve({ generations: ['2025-11-25'] });
    const refused = await rpc(url, 'tools/list');
    expect(refused.status).toBe(400);
    expect(refused.error).toEqual({
      code: -32022,
      message: 'Unsupported protocol version: this endpoint serves 2025-11-25',
      data: { supported: ['2025-11-25'] },
    });
    const client = new Client({ name: 'legacy', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['export_ledger', 'summarize', 'lookup']);
    await client.close();
  });

  it('refuses an empty or unknown list of generations, and a task server over another runtime, before listening', async () => {
    const runtime = await runtimeOf();
    opened.push({ runtime });
    const base = { runtime, host: '127.0.0.1', port: 0 };
    await expect(startHttpServer({ ...base, generations: [] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(startHttpServer({ ...base, generations: ['2024-11-05' as never] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const other = await runtimeOf();
    opened.push({ runtime: other });
    await expect(startHttpServer({ ...base, taskServer: createTaskServer({ runtime: other }) })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'taskServer must serve the runtime given as runtime',
    });
  });
});
