import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';

// Where `tasklatch serve` exposes /metrics: on a listener of its own (`--metrics HOST:PORT`), or
// on /mcp's listener behind a token of its own (`--metrics-token-file`, TASKLATCH_METRICS_TOKEN).

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-serve-metrics-'));
});

const CLEAN = { TASKLATCH_METRICS_TOKEN: '' };

async function serveWith(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  return spawnServe(['--store', `sqlite:${join(dir, `${Math.random().toString(36).slice(2)}.db`)}`, '--exports', join(dir, 'exports'), ...args], {
    env: { ...CLEAN, ...env },
  });
}

const get = async (url: string, token?: string) => {
  const res = await fetch(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text(), auth: res.headers.get('www-authenticate') };
};

describe('serve --metrics HOST:PORT', () => {
  it('serves /metrics, /healthz and /readyz on their own listener, and /metrics no more beside /mcp', async () => {
    const serve = await serveWith(['--metrics', '127.0.0.1:0']);
    try {
      const match = /tasklatch metrics on (\S+)\/metrics/.exec(serve.stdout());
      expect(match).not.toBeNull();
      const own = match![1]!;
      const shared = serve.url.replace(/\/mcp$/, '');
      expect(own).not.toBe(shared);
      const metrics = await get(`${own}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(/^# TYPE tasklatch_store_latency_seconds histogram$/m);
      expect((await get(`${own}/healthz`)).status).toBe(200);
      expect((await get(`${own}/readyz`)).status).toBe(200);
      const moved = await get(`${shared}/metrics`);
      expect(moved.status).toBe(404);
      expect(moved.text).toContain('own listener');
      expect((await get(`${shared}/readyz`)).status).toBe(200);
    } finally {
      await serve.stop();
    }
  });

  it('refuses a bad --metrics before anything starts', async () => {
    const run = await runCli(['serve', '--http', '127.0.0.1:0', '--metrics', 'nope', '--store', 'memory']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--metrics takes [HOST:]PORT');
  });
});

describe('a token for /metrics', () => {
  it('--metrics-token-file: /metrics beside /mcp answers 401 without the token, and the probes need none', async () => {
    const file = join(dir, 'metrics-token');
    await writeFile(file, 'scrape-me-42\n');
    const serve = await serveWith(['--metrics-token-file', file]);
    try {
      const base = serve.url.replace(/\/mcp$/, '');
      const none = await get(`${base}/metrics`);
      expect(none.status).toBe(401);
      expect(none.auth).toBe('Bearer');
      expect(none.text).not.toContain('tasklatch_');
      expect((await get(`${base}/metrics`, 'scrape-me-4')).status).toBe(401);
      const ok = await get(`${base}/metrics`, 'scrape-me-42');
      expect(ok.status).toBe(200);
      expect(ok.text).toMatch(/^# TYPE tasklatch_store_latency_seconds histogram$/m);
      expect((await get(`${base}/healthz`)).status).toBe(200);
      expect((await get(`${base}/readyz`)).status).toBe(200);
    } finally {
      await serve.stop();
    }
  });

  it('TASKLATCH_METRICS_TOKEN protects /metrics too, on its own listener as well', async () => {
    const serve = await serveWith(['--metrics', '127.0.0.1:0'], { TASKLATCH_METRICS_TOKEN: 'env-token-7' });
    try {
      const own = /tasklatch metrics on (\S+)\/metrics/.exec(serve.stdout())![1]!;
      expect((await get(`${own}/metrics`)).status).toBe(401);
      expect((await get(`${own}/metrics`, 'env-token-7')).status).toBe(200);
    } finally {
      await serve.stop();
    }
  });

  it('refuses an empty or missing token file before anything starts', async () => {
    const empty = join(dir, 'empty-token');
    await writeFile(empty, '\n');
    const run = await runCli(['serve', '--http', '127.0.0.1:0', '--store', 'memory', '--metrics-token-file', empty]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('is empty');
    const missing = await runCli(['serve', '--http', '127.0.0.1:0', '--store', 'memory', '--metrics-token-file', join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--metrics-token-file');
  });
});
