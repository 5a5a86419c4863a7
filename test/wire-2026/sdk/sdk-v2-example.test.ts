import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResultV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { taskId } from '@modelcontextprotocol/ext-tasks/core';
import { afterEach, describe, expect, it } from 'vitest';
import { framed, modernRequester, post, type Requester } from '../../../src/client.js';
import { ROOT } from '../../support/cli.js';
import { openStore } from '../../../src/store/open-store.js';
import { spawnServe } from '../../support/serve-process.js';
import { until } from '../../support/until.js';

// examples/sdk-v2/server.mjs and examples/tasks-2026-ext-client.mjs, run as a user runs them.

const running: ChildProcess[] = [];
const opened: Requester[] = [];

afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((r) => r.close()));
  await Promise.all(running.splice(0).map((child) => stop(child, 'SIGTERM')));
});

function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** Starts the example server on `store` and resolves once it listens. */
function startServer(store: string, extra: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(ROOT, 'examples/sdk-v2/server.mjs'), '--port', '0', '--store', store, ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
  });
  running.push(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the example did not start: ${out}${err}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (\S+)/.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      resolve({ url: match[1]!, child });
    });
    child.once('exit', (code) => reject(new Error(`the example exited with ${code}: ${out}${err}`)));
  });
}

async function requester(url: string): Promise<Requester> {
  const opened1 = await modernRequester(url);
  opened.push(opened1);
  return opened1;
}

/** `tasks/get` until the task is terminal. */
async function settled(url: string, id: string, ms = 30_000): Promise<Record<string, unknown>> {
  const end = Date.now() + ms;
  for (;;) {
    const { reply } = await post(url, framed('tasks/get', { taskId: id }));
    const status = reply.result?.status;
    if (status === 'completed' || status === 'failed' || status === 'cancelled') return reply.result!;
    if (Date.now() > end) throw new Error(`task ${id} still ${String(status)}: ${JSON.stringify(reply)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function runExample(file: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, file), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

const sqliteStore = async () => `sqlite:${join(await mkdtemp(join(tmpdir(), 'tasklatch-sdk-v2-')), 'tasks.db')}`;

describe('examples/sdk-v2/server.mjs: an SDK v2 McpServer whose slow_echo is a durable task', () => {
  it('completes a task through ext-tasks; a server killed and restarted on the same store reads it again', async () => {
    const store = await sqliteStore();
    const first = await startServer(store);
    const alice = await requester(first.url);
    const execution = await alice.session.callTool<CallToolResultV2>('slow_echo', { text: 'durable', delayMs: 200 }, { task: { preference: 'require' } });
    if (execution.kind !== 'task') throw new Error(`slow_echo did not become a task (${execution.kind})`);
    const id = execution.handle.taskId as string;
    const { outcome } = await execution.settle();
    if (outcome.status !== 'completed') throw new Error(`settled ${outcome.status}`);
    expect(outcome.result.structuredContent).toEqual({ text: 'durable', pid: first.child.pid });
    const before = await settled(first.url, id);
    // The SDK's own tools stay the SDK's: ping answers at once, no task.
    const ping = await alice.session.callTool<CallToolResultV2>('ping', {});
    expect(ping.kind).toBe('immediate');

    await stop(first.child, 'SIGKILL');
    const second = await startServer(store);
    const after = await settled(second.url, id);
    expect(after).toEqual(before);
    const again = await (await requester(second.url)).session.task(taskId(id)).result<CallToolResultV2>();
    expect(again.status === 'completed' && again.result.structuredContent).toEqual({ text: 'durable', pid: first.child.pid });
  });

  it('a task whose server was killed mid-run completes after a restart, once its lease ran out', async () => {
    const store = await sqliteStore();
    const lease = ['--lease-ms', '800'];
    const first = await startServer(store, lease);
    const create = () =>
      post(first.url, framed('tools/call', { name: 'slow_echo', arguments: { text: 'taken over', delayMs: 1500 } }), {
        headers: { 'Idempotency-Key': 'echo-1' },
      });
    const created = (await create()).reply.result!;
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const id = created.taskId as string;
    // The run has started in the first process (its lease is held) before that process dies.
    const leased = await until(async () => {
      const inspect = await openStore(store);
      try {
        const seen = await inspect.inspectTask({ taskId: id });
        return seen?.record.leaseOwner != null ? seen.record : undefined;
      } finally {
        await inspect.close();
      }
    });
    expect(leased.status).toBe('working');
    await stop(first.child, 'SIGKILL');

    const second = await startServer(store, lease);
    // The same idempotency key after the restart: the same task, not a second one.
    const retried = await post(second.url, framed('tools/call', { name: 'slow_echo', arguments: { text: 'taken over', delayMs: 1500 } }), {
      headers: { 'Idempotency-Key': 'echo-1' },
    });
    expect(retried.reply.result?.taskId).toBe(id);
    const done = await settled(second.url, id);
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { text: 'taken over', pid: second.child.pid } } });
  });

  it('refuses a task tool call without the tasks extension (-32021) and bad arguments (-32602)', async () => {
    const { url } = await startServer('memory');
    const plain = await post(url, {
      method: 'tools/call',
      params: {
        name: 'slow_echo',
        arguments: { text: 'x', delayMs: 1 },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
      },
    });
    expect(plain.reply.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } });
    const bad = await post(url, framed('tools/call', { name: 'slow_echo', arguments: { text: 1 } }));
    expect(bad.reply.error?.code).toBe(-32602);
    expect(bad.reply.error?.message).toMatch(/^Invalid arguments for tool slow_echo: text: /);
  });
});

describe('examples/tasks-2026-ext-client.mjs: ext-tasks over tasklatch/client against any 2026-07-28 server', () => {
  it('runs a task on the SDK v2 example server', async () => {
    const { url } = await startServer('memory');
    const run = await runExample('examples/tasks-2026-ext-client.mjs', [url, 'slow_echo', '{"text":"hello","delayMs":100}']);
    expect(run.out).toMatch(/tools: slow_echo ping/);
    expect(run.out).toMatch(/created: [0-9a-f-]{36}/);
    expect(run.out).toMatch(/status: completed/);
    expect(run.out).toMatch(/result: \{"text":"hello","pid":\d+\}/);
    expect(run.out).toMatch(/read again: completed/);
    expect(run.code).toBe(0);
  });

  it('runs a task on `tasklatch serve`', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tasklatch-ext-client-'));
    const serve = await spawnServe([], { cwd });
    try {
      const run = await runExample('examples/tasks-2026-ext-client.mjs', [serve.url, 'export_ledger', '{"month":"2026-06","rows":5}']);
      expect(run.out).toMatch(/tools: export_ledger/);
      expect(run.out).toMatch(/status: completed/);
      expect(run.out).toMatch(/result: \{"file":".*\.csv","rows":5,"sha256":"[0-9a-f]{64}"\}/);
      expect(run.code).toBe(0);
    } finally {
      await serve.stop();
    }
  });
});
