import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freshPooledUrl, poolerSkipReason } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// Servers and workers given only the URL of PgBouncer in transaction mode with pgbouncer=true
// (the run's pooler runs DISCARD ALL after every transaction: whatever a process left in a
// server session is gone before the next transaction), with and without a direct URL to LISTEN on.

const skip = poolerSkipReason();
let dir: string;
let tokens: string;
const running: Array<ServeProcess | WorkerProcess> = [];
const clients: Client[] = [];

async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer token-alice', ...headers } } }));
  clients.push(client);
  return client;
}

async function serve(args: string[]): Promise<ServeProcess> {
  const process = await spawnServe([...args, '--auth-tokens', tokens, '--exports', join(dir, 'exports')]);
  running.push(process);
  return process;
}

async function startWorker(args: string[]): Promise<void> {
  const worker = spawnWorker([...args, '--exports', join(dir, 'exports')]);
  running.push(worker);
  await worker.ready;
}

async function stopAll(): Promise<void> {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  await Promise.all(
    running.splice(0).map(async (p) => {
      await p.stop();
    }),
  );
}

const exportCall = (client: Client, month: string) =>
  client.request({ method: 'tools/call', params: { name: 'export_ledger', arguments: { month, rows: 5 }, task: {} } }, CreateTaskResultSchema);

async function readyz(server: ServeProcess): Promise<{ checks: Array<{ name: string; ok: boolean; detail: string }> }> {
  return (await fetch(server.url.replace(/\/mcp$/, '/readyz'))).json() as never;
}

describe.skipIf(skip !== null)(`servers and workers behind PgBouncer in transaction mode${skip === null ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-pooler-'));
    tokens = join(dir, 'tokens.json');
    await writeFile(tokens, JSON.stringify({ 'token-alice': { tenant: 'acme', subject: 'alice' } }));
  });
  afterEach(stopAll);
  afterAll(stopAll);

  it('an SDK client runs a task end to end, and two servers given only the pooled URL race one idempotency key to one task', async () => {
    const urls = (await freshPooledUrl('pooler_race'))!;
    // Both migrate the fresh schema at once, through the pooler: one migrates, the other finds it current.
    const [a, b] = await Promise.all([serve(['--store', urls.pooled]), serve(['--store', urls.pooled])]);
    const [ca, cb] = await Promise.all([httpClient(a.url, { 'Idempotency-Key': 'june' }), httpClient(b.url, { 'Idempotency-Key': 'june' })]);
    const created = await Promise.all(Array.from({ length: 8 }, (_, i) => exportCall(i % 2 === 0 ? ca : cb, '2026-06')));
    const ids = new Set(created.map((c) => c.task.taskId));
    expect(ids.size).toBe(1);
    const [taskId] = [...ids] as [string];
    const [fromA, fromB] = await Promise.all([
      ca.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
      cb.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
    ]);
    expect(fromA.structuredContent).toMatchObject({ rows: 5 });
    expect(fromB.structuredContent).toEqual(fromA.structuredContent);
    // One row for the key, and one run of it.
    const server = new URL(urls.direct);
    const schema = server.searchParams.get('schema');
    server.search = '';
    const direct = new pg.Client({ connectionString: server.toString() });
    await direct.connect();
    try {
      const rows = await direct.query<{ n: string; attempts: string }>(
        `SELECT count(*) AS n, max(attempt)::text AS attempts FROM "${schema}".tasks WHERE idempotency_key IS NOT NULL`,
      );
      expect(rows.rows[0]).toEqual({ n: '1', attempts: '1' });
    } finally {
      await direct.end();
    }
    // No LISTEN on a pooled connection: the servers report no notifications to be had.
    expect((await readyz(a)).checks.some((c) => c.name === 'notifications')).toBe(false);
  });

  it('a worker process wakes for tasks admitted by serve --no-workers: polling with the pooled URL alone', async () => {
    const urls = (await freshPooledUrl('pooler_poll'))!;
    const server = await serve(['--no-workers', '--store', urls.pooled]);
    await startWorker(['--store', urls.pooled]);
    const client = await httpClient(server.url);
    const tasks = await Promise.all(['2026-01', '2026-02', '2026-03'].map((month) => exportCall(client, month)));
    for (const { task } of tasks) {
      expect((await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).structuredContent).toMatchObject({ rows: 5 });
    }
  });

  it('with --listen-store (a direct URL) the same processes listen for changes instead', async () => {
    const urls = (await freshPooledUrl('pooler_listen'))!;
    const server = await serve(['--no-workers', '--store', urls.pooled, '--listen-store', urls.direct]);
    await startWorker(['--store', urls.pooled, '--listen-store', urls.direct]);
    const notifications = (await readyz(server)).checks.find((c) => c.name === 'notifications');
    expect(notifications).toMatchObject({ ok: true, detail: 'listening' });
    const client = await httpClient(server.url);
    const tasks = await Promise.all(['2026-04', '2026-05'].map((month) => exportCall(client, month)));
    for (const { task } of tasks) {
      expect((await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).structuredContent).toMatchObject({ rows: 5 });
    }
  });

  it('refuses a listen URL through the pooler before anything starts', async () => {
    const urls = (await freshPooledUrl('pooler_refuse'))!;
    await expect(serve(['--store', urls.pooled, '--listen-store', urls.pooled])).rejects.toThrow(/listen URL must connect directly/);
  });
});
