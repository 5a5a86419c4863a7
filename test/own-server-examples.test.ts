import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';
import { freshPostgresUrl } from './support/postgres.js';
import { spawnServe } from './support/serve-process.js';
import { until } from './support/until.js';

// The examples of the README's "Use it from your own server", run as a user runs them.

const running: ChildProcess[] = [];

afterEach(async () => {
  await Promise.all(
    running.splice(0).map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
});

/** Starts `node FILE ARGS…` and resolves with the first stdout match of `ready`. */
function start(file: string, args: string[], ready: RegExp): Promise<{ match: RegExpExecArray; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(ROOT, file), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
  });
  running.push(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not start: ${out}${err}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = ready.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      resolve({ match, child });
    });
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}: ${out}${err}`)));
  });
}

/** Runs `node FILE ARGS…` to its end. */
export function runExample(file: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, file), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('examples/own-tools: a server process and a worker process of your own on PostgreSQL', () => {
  it('admits on the server, runs on the worker, answers through the server', async () => {
    const store = await freshPostgresUrl('example_own_tools');
    const server = await start('examples/own-tools/server.mjs', [store, '0'], /listening on (\S+)/);
    const worker = await start('examples/own-tools/worker.mjs', [store], /worker (\S+) running/);
    const run = await runExample('examples/own-tools/client.mjs', [server.match[1]!]);
    expect(run.out).toMatch(/tools: count_primes\(required\) is_prime\(forbidden\)/);
    expect(run.out).toMatch(/created: \S+ working/);
    expect(run.out).toMatch(/status: completed/);
    expect(run.out).toMatch(/result: 17984 primes below 200000/);
    expect(run.code).toBe(0);
    expect(worker.match[1]).toContain(`:${worker.child.pid}:`);
  });
});

describe('examples/task-tools-client.mjs: a client without tasks against `serve --task-tools`', () => {
  it('gets the task id as text and follows it with the task tools', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tasklatch-example-'));
    const serve = await spawnServe(['--task-tools'], { cwd });
    try {
      const run = await runExample('examples/task-tools-client.mjs', [serve.url]);
      expect(run.out).toMatch(/tools: export_ledger summarize lookup task_status task_result task_cancel/);
      expect(run.out).toMatch(/answer: Started task \S+ \(working\); it runs in the background/);
      expect(run.out).toMatch(/status: completed/);
      expect(run.out).toMatch(/result: \{"file":".*\.csv","rows":50,"sha256":"[0-9a-f]{64}"\}/);
      expect(run.code).toBe(0);
    } finally {
      await serve.stop();
    }
  });
});

describe('examples/sdk-server: an McpServer of your own with tasklatch attached, two servers and two workers on PostgreSQL', () => {
  it('creates through one server, runs on a worker, answers through the other; the plain tools stay the SDK’s', async () => {
    const store = await freshPostgresUrl('example_sdk_server');
    const servers = [];
    for (let i = 0; i < 2; i++) servers.push(await start('examples/sdk-server/server.mjs', [store, '0'], /listening on (\S+)/));
    const workers = [];
    for (let i = 0; i < 2; i++) workers.push(await start('examples/sdk-server/worker.mjs', [store], /worker (\S+) running/));
    const run = await runExample('examples/sdk-server/client.mjs', [servers[0]!.match[1]!, servers[1]!.match[1]!]);
    expect(run.out).toMatch(/tools: render_report\(required\) count_words\(optional\) ping\(forbidden\)/);
    expect(run.out).toMatch(/ping: pong/);
    expect(run.out).toMatch(/count_words plain: 3/);
    expect(run.out).toMatch(/created: \S+ working/);
    expect(run.out).toMatch(/status: completed/);
    const pid = Number(/"pid":(\d+)/.exec(run.out)?.[1]);
    expect(workers.map((w) => w.child.pid)).toContain(pid);
    expect(run.out).toMatch(/result: report 2026-Q2: 5 pages/);
    expect(run.code).toBe(0);
  });
});

describe('examples/sdk-server: progress of a task run by a worker process', () => {
  it('reaches the requestor through the server its session is on', async () => {
    const store = await freshPostgresUrl('example_sdk_progress');
    const server = await start('examples/sdk-server/server.mjs', [store, '0'], /listening on (\S+)/);
    await start('examples/sdk-server/worker.mjs', [store], /worker (\S+) running/);
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { CallToolResultSchema, CreateTaskResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.match[1]!)));
    try {
      const heard: Array<{ progress: number; total?: number }> = [];
      const created = await client.request(
        { method: 'tools/call', params: { name: 'render_report', arguments: { quarter: '2026-Q2', pages: 5 }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
        { onprogress: (p) => heard.push(p) },
      );
      const result = await client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema);
      expect(result.structuredContent).toMatchObject({ pages: 5 });
      await until(() => (heard.at(-1)?.progress !== 5 ? undefined : true));
      // Pages 40 ms apart: a page may be coalesced into the next, but the last is never lost to
      // the end of the task, and none comes twice or out of order.
      expect(heard.length).toBeGreaterThanOrEqual(1);
      expect(heard.at(-1)).toEqual({ progress: 5, total: 5 });
      const values = heard.map((p) => p.progress);
      expect(values).toEqual([...new Set(values)].sort((a, b) => a - b));
    } finally {
      await client.close();
    }
  });
});

describe('examples/sdk-task-store: an SDK task server on tasklatch’s durable TaskStore', () => {
  it('serves registerToolTask tasks from the SQLite store, and a restarted server still answers for them', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { CallToolResultSchema, CreateTaskResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const db = `sqlite:${join(await mkdtemp(join(tmpdir(), 'tasklatch-sdk-store-')), 'tasks.db')}`;
    const connect = async (url: string) => {
      const client = new Client({ name: 't', version: '1' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      return client;
    };
    const first = await start('examples/sdk-task-store/server.mjs', [db, '0'], /listening on (\S+)/);
    const client = await connect(first.match[1]!);
    const { task } = await client.request({ method: 'tools/call', params: { name: 'slow_sum', arguments: { a: 2, b: 40 }, task: {} } }, CreateTaskResultSchema);
    const result = await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: '42' }]);
    await client.close();
    first.child.kill('SIGTERM');
    const second = await start('examples/sdk-task-store/server.mjs', [db, '0'], /listening on (\S+)/);
    const again = await connect(second.match[1]!);
    expect((await again.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    await again.close();
  });
});
