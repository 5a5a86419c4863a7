import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { BIN } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { until } from '../support/until.js';

let dir: string;
let store: string;
let serve: ServeProcess;
let client: Client;

function startWorker(extra: string[] = []) {
  const child = spawn(process.execPath, [BIN, 'worker', '--store', store, '--exports', join(dir, 'exports'), '--lease-ms', '3000', ...extra], {
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => /running/.test(d.toString()) && resolve()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, ready, exited };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-worker-'));
  store = `sqlite:${join(dir, 'tasks.db')}`;
  await writeFile(join(dir, 'tokens.json'), JSON.stringify({ t: { tenant: 'acme', subject: 'alice' } }));
  serve = await spawnServe(['--no-workers', '--store', store, '--auth-tokens', join(dir, 'tokens.json')]);
  client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { Authorization: 'Bearer t' } } }));
});

afterAll(async () => {
  await client.close();
  await serve.stop();
});

const exportTask = (args: Record<string, unknown>) =>
  client.request({ method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-06', ...args }, task: {} } }, CreateTaskResultSchema);

describe('tasklatch worker beside serve --no-workers', () => {
  it('runs what the server admitted; SIGTERM drains and gives an unfinished lease back', async () => {
    const quick = await exportTask({ rows: 5 });
    await new Promise((r) => setTimeout(r, 300));
    expect((await client.experimental.tasks.getTask(quick.task.taskId)).status).toBe('working');

    const first = startWorker(['--drain-ms', '300']);
    await first.ready;
    const result = await client.experimental.tasks.getTaskResult(quick.task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ rows: 5 });

    const slow = await exportTask({ rows: 5, delayMs: 20_000 });
    // The worker runs it: its first part is written.
    await until(async () => ((await client.experimental.tasks.getTask(slow.task.taskId)).statusMessage?.includes('rows written') === true ? true : undefined));
    first.child.kill('SIGTERM');
    // The drain ends the run, it does not wait for the handler: the task is left working, its lease given back.
    expect(await first.exited).toBe(0);
    const inspect = await SqliteStore.open(store.slice('sqlite:'.length));
    const record = (await inspect.get({ authKey: 'acme/alice', taskId: slow.task.taskId, now: Date.now() })).record;
    await inspect.close();
    expect(record).toMatchObject({ status: 'working', leaseOwner: null, attempt: 1 });

    const second = startWorker();
    await second.ready;
    await client.experimental.tasks.cancelTask(slow.task.taskId);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
