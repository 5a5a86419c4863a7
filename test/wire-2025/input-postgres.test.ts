import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { rpc, settle, WITH_TASKS } from '../support/stateless.js';

let dir: string;
let store: string;
let serveA: ServeProcess;
let serveB: ServeProcess;
interface WorkerProcess {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
}
const workers: WorkerProcess[] = [];

function startWorker(): WorkerProcess {
  const child = spawn(process.execPath, [BIN, 'worker', '--store', store, '--exports', join(dir, 'exports'), '--lease-ms', '2000'], {
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => /running/.test(d.toString()) && resolve()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const handle = { child, ready, exited };
  workers.push(handle);
  return handle;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-input-'));
  await writeFile(
    join(dir, 'tokens.json'),
    JSON.stringify({ 'token-alice': { tenant: 'acme', subject: 'alice' }, 'token-bob': { tenant: 'globex', subject: 'bob' } }),
  );
  store = await freshPostgresUrl('input_servers');
  const args = ['--no-workers', '--store', store, '--auth-tokens', join(dir, 'tokens.json')];
  [serveA, serveB] = await Promise.all([spawnServe(args), spawnServe(args)]);
});

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  expect(await Promise.all([serveA.stop(), serveB.stop()])).toEqual([0, 0]);
});

const exportOf = async (taskId: string) =>
  existsSync(join(dir, 'exports', 'acme')) ? (await readdir(join(dir, 'exports', 'acme'))).filter((f) => f.startsWith(`task_${taskId}.`)) : [];

describe('durable input across processes on one PostgreSQL (two servers without workers, worker processes)', () => {
  it('2026-07-28: the worker that asked is killed while the task waits; the answer goes to the other server; another worker finishes', async () => {
    const first = startWorker();
    await first.ready;
    const alice = { token: 'token-alice', capabilities: { ...WITH_TASKS, elicitation: {} } };
    const created = await rpc(serveA.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 25, confirm: true } }, alice);
    const taskId = created.result!.taskId as string;
    let view: Record<string, unknown> | undefined;
    for (let i = 0; i < 300 && view?.status !== 'input_required'; i++) {
      view = (await rpc(serveB.url, 'tasks/get', { taskId }, alice)).result;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(view?.inputRequests).toHaveProperty('confirm-export');
    first.child.kill('SIGKILL');
    await first.exited;
    // Hostile answers first: another tenant's, then none changes the task.
    expect(
      (await rpc(serveB.url, 'tasks/update', { taskId, inputResponses: { 'confirm-export': { action: 'decline' } } }, { ...alice, token: 'token-bob' })).error
        ?.code,
    ).toBe(-32602);
    expect((await rpc(serveB.url, 'tasks/get', { taskId }, alice)).result?.status).toBe('input_required');
    const second = startWorker();
    await second.ready;
    expect(
      (await rpc(serveB.url, 'tasks/update', { taskId, inputResponses: { 'confirm-export': { action: 'accept', content: { confirm: true } } } }, alice)).result,
    ).toEqual({
      resultType: 'complete',
    });
    // A second, different answer after the first is ignored; the export runs once.
    await rpc(serveA.url, 'tasks/update', { taskId, inputResponses: { 'confirm-export': { action: 'decline' } } }, alice);
    expect(await settle(serveA.url, taskId, alice)).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 25 } } });
    expect(await exportOf(taskId)).toHaveLength(1);
  });

  it('2025-11-25: the SDK client answers on the tasks/result stream of the other server', async () => {
    startWorker();
    const connect = async (serve: ServeProcess, elicit: boolean) => {
      const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
      if (elicit) client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } }));
      await client.connect(new StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { Authorization: 'Bearer token-alice' } } }));
      return client;
    };
    const onA = await connect(serveA, true);
    const onB = await connect(serveB, true);
    try {
      const created = await onA.request(
        { method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-07', rows: 15, confirm: true }, task: { ttl: 120_000 } } },
        CreateTaskResultSchema,
      );
      const result = await onB.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      expect(result.structuredContent).toMatchObject({ rows: 15 });
      expect(await exportOf(created.task.taskId)).toHaveLength(1);
    } finally {
      await Promise.all([onA.close(), onB.close()]);
    }
  });
});
