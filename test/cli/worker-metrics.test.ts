import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGuard, type Guard } from '../../src/service/guard.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { BIN, runCli } from '../support/cli.js';
import { until } from '../support/until.js';

// `tasklatch worker --metrics HOST:PORT`: a worker process runs a task admitted by this one, and
// its own endpoint counts the claim and the run.

let dir: string;
let store: string;
let admitter: Guard;
let sqlite: SqliteStore;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-worker-metrics-'));
  store = `sqlite:${join(dir, 'tasks.db')}`;
  sqlite = await SqliteStore.open(join(dir, 'tasks.db'));
  // Admits only, as the demo tools' app (the worker's default with them); the worker process runs the task.
  admitter = openGuard({ store: sqlite, app: 'tasklatch-demo', capabilities: { cancel: {}, requests: { tools: { call: {} } } } });
});

afterAll(async () => {
  await sqlite.close();
});

/** Runs `tasklatch worker` on the test's store with a metrics listener; `metricsUrl` once it serves, `stop` sends SIGTERM and waits. */
async function startWorker(extra: string[]): Promise<{ metricsUrl: string; base: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [BIN, 'worker', '--store', store, '--exports', join(dir, 'exports'), '--metrics', '127.0.0.1:0', ...extra], {
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const metricsUrl = await until(() => /metrics on (\S+)/.exec(out)?.[1]);
    return { metricsUrl, base: metricsUrl.replace(/\/metrics$/, ''), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

describe('tasklatch worker --metrics', () => {
  it('serves /metrics, /healthz and /readyz, counting what the worker did', async () => {
    const { metricsUrl, base, stop } = await startWorker([]);
    try {
      const created = await admitter.requestor.create({
        auth: 'acme/alice',
        tool: { name: 'export_ledger', execution: { taskSupport: 'optional' } },
        request: { method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-06' }, task: { ttl: 60_000 } } },
      });
      expect(created.decision).toBe('ACCEPT_TASK');
      const text = await until(async () => {
        const body = await (await fetch(metricsUrl)).text();
        return /^tasklatch_run_duration_seconds_count\{tool="export_ledger",outcome="completed"\} 1$/m.test(body) ? body : undefined;
      }, 30_000);
      expect(text).toMatch(/^tasklatch_claims_total 1$/m);
      expect(text).toMatch(/^tasklatch_tasks_ended_total\{tool="export_ledger",status="completed"\} 1$/m);
      expect(text).toMatch(/^tasklatch_claim_latency_seconds_count 1$/m);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as { ready: boolean }).ready).toBe(true);
      expect((await fetch(`${base}/mcp`)).status).toBe(404);
    } finally {
      await stop();
    }
  });

  it('--metrics-token-file: /metrics answers 401 without the token, and the probes need none', async () => {
    const file = join(dir, 'worker-metrics-token');
    await writeFile(file, 'worker-token-3\n');
    const { metricsUrl, base, stop } = await startWorker(['--metrics-token-file', file]);
    try {
      expect((await fetch(metricsUrl)).status).toBe(401);
      expect((await fetch(metricsUrl, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const allowed = await fetch(metricsUrl, { headers: { authorization: 'Bearer worker-token-3' } });
      expect(allowed.status).toBe(200);
      expect(await allowed.text()).toMatch(/^tasklatch_claims_total /m);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await stop();
    }
  });

  it('refuses a --metrics that does not parse before it starts, in one line', async () => {
    const run = await runCli(['worker', '--store', store, '--metrics', 'nowhere']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe('tasklatch worker: --metrics takes [HOST:]PORT, got "nowhere"');
  });
});
