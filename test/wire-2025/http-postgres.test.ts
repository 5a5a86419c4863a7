import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcError } from '../support/mcp.js';
import { listen, readEvents, rpc, settle } from '../support/stateless.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { until } from '../support/until.js';

let dir: string;
let serveA: ServeProcess;
let serveB: ServeProcess;
const clients: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-two-'));
  const tokens = join(dir, 'tokens.json');
  await writeFile(tokens, JSON.stringify({ 'token-alice': { tenant: 'acme', subject: 'alice' }, 'token-bob': { tenant: 'globex', subject: 'bob' } }));
  const store = await freshPostgresUrl('two_servers');
  const args = ['--store', store, '--auth-tokens', tokens, '--exports', join(dir, 'exports')];
  [serveA, serveB] = await Promise.all([spawnServe(args), spawnServe(args)]);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  const codes = await Promise.all([serveA.stop(), serveB.stop()]);
  expect(codes).toEqual([0, 0]);
});

async function client(serve: ServeProcess, token: string): Promise<Client> {
  const c = new Client({ name: 'test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  clients.push(c);
  return c;
}

function exportCall(c: Client, args: Record<string, unknown>, key?: string) {
  return c.request(
    {
      method: 'tools/call',
      params: {
        name: 'export_ledger',
        arguments: args,
        task: { ttl: 120_000 },
        ...(key === undefined ? {} : { _meta: { 'io.tasklatch/idempotency-key': key } }),
      },
    },
    CreateTaskResultSchema,
  );
}

describe('two serve --http processes on one PostgreSQL', () => {
  it('answer for each other’s tasks; tasks/result on one is woken by the completion written by the other', async () => {
    const aliceA = await client(serveA, 'token-alice');
    const aliceB = await client(serveB, 'token-alice');
    const created = await exportCall(aliceA, { month: '2026-06', rows: 50, delayMs: 600 }, 'june');
    expect((await aliceB.experimental.tasks.getTask(created.task.taskId)).status).toBe('working');
    const retried = await exportCall(aliceB, { month: '2026-06', rows: 50, delayMs: 600 }, 'june');
    expect(retried.task.taskId).toBe(created.task.taskId);

    const result = await aliceB.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    const received = Date.now();
    const task = await aliceB.experimental.tasks.getTask(created.task.taskId);
    expect(task.status).toBe('completed');
    // Woken by A's notification, not by B's own look: a waiter that hears every change looks
    // again only every 30 s, and a look of its own would have answered that long after the wait began.
    // (How soon the notification wakes it is measured by the bench, not asserted here.)
    expect(received - Date.parse(task.lastUpdatedAt)).toBeLessThan(15_000);
    expect(result.structuredContent).toMatchObject({ rows: 50 });
    const listed = await aliceB.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(created.task.taskId);
  });

  it('a cancel through one process stops the handler running in the other', async () => {
    const aliceA = await client(serveA, 'token-alice');
    const aliceB = await client(serveB, 'token-alice');
    const created = await exportCall(aliceA, { month: '2026-07', rows: 50, delayMs: 60_000 });
    const theirs = () =>
      (existsSync(join(dir, 'exports', 'acme')) ? readdirSync(join(dir, 'exports', 'acme')) : []).filter((f) => f.includes(created.task.taskId));
    // The handler in A has written its first part.
    await until(async () =>
      (await aliceB.experimental.tasks.getTask(created.task.taskId)).statusMessage?.includes('rows written') === true ? true : undefined,
    );
    expect(theirs()).not.toEqual([]);
    expect((await aliceB.experimental.tasks.cancelTask(created.task.taskId)).status).toBe('cancelled');
    const result = await aliceA.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    // The handler in A saw the cancellation and removed its partial file (left alone, it would run for a minute).
    await until(() => (theirs().length === 0 ? true : undefined));
    expect(serveA.stderr()).not.toMatch(/"level":50/);
  });

  it('keeps tenants apart across processes', async () => {
    const aliceA = await client(serveA, 'token-alice');
    const bobB = await client(serveB, 'token-bob');
    const created = await exportCall(aliceA, { month: '2026-08', rows: 1 });
    for (const probe of [
      () => bobB.experimental.tasks.getTask(created.task.taskId),
      () => bobB.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema),
      () => bobB.experimental.tasks.cancelTask(created.task.taskId),
    ]) {
      expect(await rpcError(probe())).toEqual({ code: -32602, message: 'Task not found' });
    }
    expect((await bobB.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it('answer for each other on 2026-07-28 too: created on one, watched and cancelled through the other, read on 2025-11-25', async () => {
    const alice = { token: 'token-alice' };
    const created = await rpc(serveA.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-09', rows: 20, delayMs: 400 } }, alice);
    const taskId = created.result!.taskId as string;
    // Read through the other process at once: the create was durable before its answer.
    expect((await rpc(serveB.url, 'tasks/get', { taskId }, alice)).result).toMatchObject({ taskId, status: 'working' });
    const done = await settle(serveB.url, taskId, alice);
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 20 } } });
    const legacy = await client(serveA, 'token-alice');
    expect((await legacy.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).structuredContent).toMatchObject({ rows: 20 });

    const long = await rpc(serveA.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-10', rows: 50, delayMs: 3000 } }, alice);
    const longId = long.result!.taskId as string;
    expect((await rpc(serveB.url, 'tasks/cancel', { taskId: longId }, alice)).result).toEqual({ resultType: 'complete' });
    expect((await rpc(serveA.url, 'tasks/get', { taskId: longId }, alice)).result?.status).toBe('cancelled');
    const bob = await rpc(serveB.url, 'tasks/get', { taskId: longId }, { token: 'token-bob' });
    expect(bob.error).toEqual({ code: -32602, message: 'Task not found' });
  });

  it('stream notifications/tasks from a subscription on one server for a task run by the other', async () => {
    const alice = { token: 'token-alice' };
    const created = await rpc(serveA.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-12', rows: 30, delayMs: 600 } }, alice);
    const taskId = created.result!.taskId as string;
    const { res, abort } = await listen(serveB.url, 'token-alice', [taskId], 9);
    const messages = await readEvents(res, abort, (got) => got.some((m) => m.params.status === 'completed'));
    const statuses = messages.filter((m) => m.method === 'notifications/tasks').map((m) => m.params.status);
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses[0]).toBe('working');
  });
});
