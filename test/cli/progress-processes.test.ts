import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { until } from '../support/until.js';

// Progress crosses processes: the requestor's session is in one `serve --no-workers` process, the
// handler runs in a `tasklatch worker` process, and the progress travels through PostgreSQL.

let dir: string;
let serveA: ServeProcess;
let serveB: ServeProcess;
let worker: ChildProcess;
const clients: Client[] = [];

function startWorker(store: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, 'worker', '--store', store, '--exports', join(dir, 'exports')], {
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('worker did not start')), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      if (!/running/.test(d.toString())) return;
      clearTimeout(timer);
      resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-progress-'));
  const tokens = join(dir, 'tokens.json');
  await writeFile(tokens, JSON.stringify({ 'token-alice': { tenant: 'acme', subject: 'alice' }, 'token-bob': { tenant: 'globex', subject: 'bob' } }));
  const store = await freshPostgresUrl('progress_processes');
  const args = ['--no-workers', '--store', store, '--auth-tokens', tokens];
  [serveA, serveB] = await Promise.all([spawnServe(args), spawnServe(args)]);
  worker = await startWorker(store);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  const stopped = new Promise((resolve) => worker.once('exit', resolve));
  worker.kill('SIGTERM');
  await stopped;
  expect(await Promise.all([serveA.stop(), serveB.stop()])).toEqual([0, 0]);
});

async function client(serve: ServeProcess, token: string): Promise<Client> {
  const c = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
  await c.connect(new StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  clients.push(c);
  return c;
}

/** export_ledger as a task with a progressToken; the progress it hears, and its result once done. */
async function exportWithProgress(c: Client, month: string) {
  const heard: Progress[] = [];
  const created = await c.request(
    { method: 'tools/call', params: { name: 'export_ledger', arguments: { month, rows: 6, delayMs: 1200 }, task: { ttl: 120_000 } } },
    CreateTaskResultSchema,
    { onprogress: (p) => heard.push(p) },
  );
  const result = await c.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema);
  await until(() => (heard.length < 6 ? undefined : true));
  return { heard, result };
}

describe('progress of a task run by a worker process', () => {
  it('reaches the requestor of each task through the serve process its session is on, once', async () => {
    const [alice, bob] = await Promise.all([client(serveA, 'token-alice'), client(serveB, 'token-bob')]);
    const [ofAlice, ofBob] = await Promise.all([exportWithProgress(alice, '2026-06'), exportWithProgress(bob, '2026-07')]);
    expect(ofAlice.result.structuredContent).toMatchObject({ rows: 6 });
    expect(ofBob.result.structuredContent).toMatchObject({ rows: 6 });
    // Every chunk's progress, in order, none twice: the serve process that holds a session is
    // the only one that sends to it, and the other process's task is not its session's.
    const expected = [1, 2, 3, 4, 5, 6].map((progress) => ({ progress, total: 6 }));
    expect(ofAlice.heard).toEqual(expected);
    expect(ofBob.heard).toEqual(expected);
  });
});
