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
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { Principal } from '../../src/tools/principal.js';
import { callAsTask, rpcError } from '../support/mcp.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { rpc } from '../support/stateless.js';

let server: TaskServer;
let http: RunningHttp;
let store: PostgresStore;
let legacy: Client;
const ALICE = { token: 'token-alice' };

beforeAll(async () => {
  store = await PostgresStore.open(await freshPostgresUrl('hostile_input'));
  server = createTaskServer({
    store,
    tools: demoTools({ exportsDir: await mkdtemp(join(tmpdir(), 'tasklatch-hostile-')) }),
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: createLogger('silent'),
  });
  await server.start();
  http = await startHttpServer({
    runtime: server.runtime,
    taskServer: server,
    host: '127.0.0.1',
    port: 0,
    tokens: new Map([['token-alice', { tenant: 'acme', subject: 'alice' }]]),
  });
  legacy = new Client({ name: 'legacy', version: '1.0.0' });
  await legacy.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: { Authorization: 'Bearer token-alice' } } }));
});

afterAll(async () => {
  await legacy.close();
  await http.close();
  await server.close();
  await store.close();
});

const deep = (levels: number): unknown => {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = { v: value };
  return value;
};

const taskCount = async () => (await legacy.experimental.tasks.listTasks()).tasks.length;

describe('input no store can hold, on PostgreSQL, over both generations', () => {
  it('refuses it with -32602 and a plain message, stores nothing, and answers the next request', async () => {
    const before = await taskCount();
    const refusals: Array<[string, Promise<unknown>]> = [
      ['NUL in an argument', callAsTask(legacy, 'export_ledger', { month: '2026-06\u0000' })],
      ['lone surrogate in an argument', callAsTask(legacy, 'export_ledger', { month: '\uD800' })],
      ['nesting 2,000 deep', callAsTask(legacy, 'export_ledger', { month: '2026-06', format: deep(2000) })],
      [
        'a non-string key',
        legacy.request(
          { method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-06' }, task: {}, _meta: { 'io.tasklatch/idempotency-key': 42 } } },
          {} as never,
        ),
      ],
      ['a 3 kB key', callAsTask(legacy, 'export_ledger', { month: '2026-06' }, { key: 'k'.repeat(3000) })],
    ];
    for (const [name, call] of refusals) {
      const error = await rpcError(call);
      expect(error.code, name).toBe(-32602);
      expect(error.message, name).not.toMatch(/index|constraint|invalid byte|tasks_|jsonb/i);
    }
    for (const arguments_ of [{ month: 'bad\u0000' }, { month: deep(100) }]) {
      const out = await rpc(http.url, 'tools/call', { name: 'export_ledger', arguments: arguments_ }, ALICE);
      expect([out.status, out.error?.code]).toEqual([400, -32602]);
    }
    expect(await taskCount()).toBe(before);
  });

  it('answers task ids no store can hold like unknown ones, and keeps auditing every tenant after them', async () => {
    for (const taskId of ['x'.repeat(5000), 'a\u0000b', '\uDC00']) {
      expect(await rpcError(legacy.experimental.tasks.getTask(taskId))).toEqual({ code: -32602, message: 'Task not found' });
      expect(await rpcError(legacy.experimental.tasks.cancelTask(taskId))).toEqual({ code: -32602, message: 'Task not found' });
      const name = `=?base64?${Buffer.from(taskId, 'utf8').toString('base64')}?=`;
      const lone = taskId === '\uDC00';
      // A lone surrogate has no UTF-8 form for the header to carry; the body alone is refused first.
      const out = await rpc(http.url, 'tasks/get', { taskId }, { ...ALICE, headers: { 'mcp-name': name } });
      expect(out.error, JSON.stringify(taskId.slice(0, 10))).toEqual(
        lone ? expect.objectContaining({ code: -32020 }) : { code: -32602, message: 'Task not found' },
      );
    }
    const created = await callAsTask(legacy, 'export_ledger', { month: '2026-06', rows: 1 });
    await legacy.experimental.tasks.getTask(created.task.taskId);
    const trail = await store.auditTrail({ taskId: created.task.taskId });
    expect(trail.map((e) => e.decision)).toContain('RETURN_STATUS');
  });

  it('raises a ttl of 0 to the smallest one granted', async () => {
    const created = await callAsTask(legacy, 'export_ledger', { month: '2026-06', rows: 1 }, { ttl: 0 });
    expect(created.task.ttl).toBe(1000);
  });
});
