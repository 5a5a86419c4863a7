import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedServer } from '../support/embedded-postgres.js';
import { WITH_TASKS } from '../support/stateless.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { until } from '../support/until.js';

// A real `tasklatch serve` on a PostgreSQL of its own, which the test stops: both wires answer
// the retryable "store unavailable" error (never -32603), 2026-07-28 with 503 and Retry-After,
// nothing is logged as a server fault, and calls work again once the database is back.

let pg: EmbeddedServer;
let serve: ServeProcess;
let session: Client;

beforeAll(async () => {
  pg = await startEmbeddedPostgres({ maxConnections: 50 });
  // Reads ride through an outage this long before they answer Store unavailable.
  serve = await spawnServe(['--store', `${pg.url}?schema=store_outage`, '--exports', '.tasklatch/outage-exports', '--store-outage-ms', '300']);
  session = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
  await session.connect(new StreamableHTTPClientTransport(new URL(serve.url)));
}, 120_000);

afterAll(async () => {
  await session?.close();
  await serve?.stop();
  await pg?.stop();
});

let nextId = 1;
const NAMED_BY: Record<string, string> = { 'tools/call': 'name', 'tasks/get': 'taskId' };

/** One 2026-07-28 request, with the response's headers. */
async function modern(method: string, params: Record<string, unknown>) {
  const res = await fetch(serve.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': String(params[NAMED_BY[method]!]),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': WITH_TASKS,
          'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
        },
      },
    }),
    signal: AbortSignal.timeout(20_000),
  });
  const body = (await res.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string; data?: { retryAfterMs?: unknown } } };
  return { status: res.status, retryAfter: res.headers.get('retry-after'), ...body };
}

const CALL = { name: 'export_ledger', arguments: { month: '2026-06', rows: 5 }, task: { ttl: 60_000 } };

async function legacyError(work: Promise<unknown>): Promise<McpError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe('a store that is down', () => {
  it('answers a retryable error on both wires, logs no fault, and serves again once the store is back', async () => {
    const modernTask = await modern('tools/call', CALL);
    expect(modernTask.error).toBeUndefined();
    const modernId = modernTask.result!.taskId as string;
    const legacyTask = await session.request({ method: 'tools/call', params: CALL }, CreateTaskResultSchema);
    const legacyId = legacyTask.task.taskId;

    await pg.halt();
    for (const [method, params] of [
      ['tools/call', CALL],
      ['tasks/get', { taskId: modernId }],
    ] as const) {
      const down = await modern(method, params);
      expect(down.status, method).toBe(503);
      expect(down.retryAfter, method).toBe('2');
      expect(down.error, method).toEqual({ code: -32001, message: 'Store unavailable: retry later', data: { retryAfterMs: 2000 } });
    }
    for (const work of [session.request({ method: 'tools/call', params: CALL }, CreateTaskResultSchema), session.experimental.tasks.getTask(legacyId)]) {
      const error = await legacyError(work);
      expect(error.code).toBe(-32001);
      expect(error.message).toContain('Store unavailable: retry later');
      expect(error.data).toEqual({ retryAfterMs: 2000 });
    }
    // One warning per refused request, without a stack; stderr may trail the answers a little.
    const lines = await until(() => {
      const all = serve.stderr().split('\n');
      return all.filter((line) => line.includes('"msg":"store unavailable"')).length >= 4 ? all : undefined;
    });
    expect(lines.filter((line) => line.includes('-32603') || line.includes('request failed') || line.includes('"level":50'))).toEqual([]);
    expect(lines.filter((line) => line.includes('store unavailable') && line.includes('"stack"'))).toEqual([]);

    await pg.resume();
    const back = await until(async () => {
      const got = await modern('tasks/get', { taskId: modernId });
      return got.status === 200 ? got : undefined;
    }, 30_000);
    expect(back.result).toMatchObject({ taskId: modernId });
    expect((await modern('tools/call', CALL)).result).toMatchObject({ resultType: 'task' });
    expect((await session.experimental.tasks.getTask(legacyId)).taskId).toBe(legacyId);
    expect((await session.request({ method: 'tools/call', params: CALL }, CreateTaskResultSchema)).task.taskId).toBeTypeOf('string');
  }, 120_000);
});
