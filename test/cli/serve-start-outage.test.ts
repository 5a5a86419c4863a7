import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe } from '../support/serve-process.js';
import { TcpProxy, targetOf } from '../support/tcp-proxy.js';

// `tasklatch serve` and `tasklatch worker` whose PostgreSQL connection drops at each step of
// their start (the pool's first connection, the migrations, the audit pool, the change
// listener), through a TCP proxy the test cuts after the n-th connection and restores once the
// process has tried again: it starts, and nothing it prints is a raw stack.

let proxy: TcpProxy;
let url: string;

beforeAll(async () => {
  const direct = await freshPostgresUrl('serve_start_outage');
  proxy = await TcpProxy.start(targetOf(direct));
  url = proxy.route(direct);
});

afterAll(async () => {
  await proxy?.close();
});

describe('serve whose store connection drops while it starts', () => {
  it.each([1, 2, 3, 4, 5])(
    'starts when the connection drops after connection %i, with no raw stack',
    async (n) => {
      proxy.cutAfter(n);
      // Restored once serve has met the cut and come back for a connection that was refused.
      const restore = () => proxy.restore();
      proxy.once('refused', restore);
      const serve = await spawnServe(['--store', url, '--wait-for-store', '60000'], { env: { TASKLATCH_LOG_LEVEL: 'info' } });
      try {
        const health = await fetch(new URL('/healthz', serve.url));
        expect(health.status).toBe(200);
        expect(serve.stderr()).not.toMatch(/^\s+at /m);
        expect(serve.stderr()).not.toContain('Uncaught');
      } finally {
        proxy.off('refused', restore);
        proxy.restore();
        await serve.stop();
      }
    },
    60_000,
  );
});

describe('worker whose store connection drops while it starts', () => {
  it.each([1, 2, 3, 4])(
    'starts when the connection drops after connection %i, with no raw stack',
    async (n) => {
      proxy.cutAfter(n);
      const restore = () => proxy.restore();
      proxy.once('refused', restore);
      const child = spawn(process.execPath, [BIN, 'worker', '--store', url, '--wait-for-store', '60000'], {
        cwd: ROOT,
        env: { ...process.env, TASKLATCH_LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const started = new Promise<boolean>((resolve) => {
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString();
          if (err.includes('tasklatch worker started')) resolve(true);
        });
        void exited.then(() => resolve(false));
      });
      try {
        expect(await started, err).toBe(true);
        expect(err).not.toMatch(/^\s+at /m);
      } finally {
        proxy.off('refused', restore);
        proxy.restore();
        if (child.exitCode === null) child.kill('SIGTERM');
        await exited;
      }
    },
    60_000,
  );
});
