import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../support/embedded-postgres.js';
import { rpc } from '../support/stateless.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { until } from '../support/until.js';

// The operator's endpoints of a real `tasklatch serve` on a PostgreSQL of its own, which the test
// stops and starts again (never the machine's server): /healthz, /readyz and /metrics, and
// `tasklatch doctor` on the same store.

let pg: EmbeddedServer;
let serve: ServeProcess;
let base: string;
let storeUrl: string;

beforeAll(async () => {
  pg = await startEmbeddedPostgres({ maxConnections: 50 });
  storeUrl = `${pg.url}?schema=operator_endpoints`;
  serve = await spawnServe(['--store', storeUrl]);
  base = serve.url.replace(/\/mcp$/, '');
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  await pg?.stop();
});

const get = async (path: string) => {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
};

/** One 2026-07-28 task call of the demo tools: the work the metrics must count. */
async function callTool(): Promise<void> {
  const out = await rpc(serve.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06' }, task: { ttl: 60_000 } });
  expect(out.status).toBeLessThan(300);
  expect(out.error).toBeUndefined();
}

describe('serve: /healthz, /readyz, /metrics', () => {
  it('is alive and ready, and its metrics count the work done', async () => {
    expect(await get('/healthz')).toMatchObject({ status: 200 });
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toMatchObject({
      ready: true,
      checks: [
        { name: 'store', ok: true },
        { name: 'migrations', ok: true },
        { name: 'notifications', ok: true },
      ],
    });
    await callTool();
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.type).toMatch(/^text\/plain/);
    expect(metrics.text).toMatch(/^tasklatch_admissions_total\{tool="export_ledger",decision="ACCEPT_TASK"\} 1$/m);
    expect(metrics.text).toMatch(/^# TYPE tasklatch_store_latency_seconds histogram$/m);
    expect(metrics.text).toMatch(/^tasklatch_tasks\{status="working"\} \d+$/m);
    await until(
      async () => (/^tasklatch_tasks_ended_total\{tool="export_ledger",status="completed"\} 1$/m.test((await get('/metrics')).text) ? true : undefined),
      20_000,
    );
  });

  it('answers the operator paths only to an allowed Host (DNS rebinding), and only to GET', async () => {
    const port = Number(new URL(base).port);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/metrics', headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(404);
    expect((await fetch(`${base}/readyz`, { method: 'POST' })).status).toBe(405);
  });

  it('turns unready (503, with the reason) while PostgreSQL is down, and ready again when it is back', async () => {
    await pg.halt();
    const down = await until(async () => {
      const r = await get('/readyz');
      return r.status === 503 ? r : undefined;
    });
    const body = JSON.parse(down.text) as { ready: boolean; reason: string };
    expect(body.ready).toBe(false);
    expect(body.reason).toMatch(/^store: unreachable/);
    expect((await get('/healthz')).status).toBe(200);
    const doctor = await runCli(['doctor', '--store', storeUrl]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/FAIL\s+store/);
    expect(doctor.stdout).toContain('fix:');

    await pg.resume();
    const up = await until(async () => {
      const r = await get('/readyz');
      return r.status === 200 ? r : undefined;
    }, 30_000);
    expect(JSON.parse(up.text)).toMatchObject({ ready: true });
    const healthy = await runCli(['doctor', '--store', storeUrl, '--json']);
    expect(healthy.code).toBe(0);
    expect(JSON.parse(healthy.stdout)).toMatchObject({ ready: true });
  }, 90_000);
});
