import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { startUnderNpx, stopsWithItsLauncher } from '../support/npx-process.js';

// A process manager stops `npx tasklatch serve` by signalling the npx process alone. npm passes a
// SIGTERM to the `sh -c` it runs the bin in, and that shell (dash) dies without passing it on; a
// SIGKILL of npm passes nothing. Either way the server must notice it lost its launcher and stop,
// not stay behind orphaned and serving.
describe('npx tasklatch serve under a process manager', () => {
  it.each(['SIGTERM', 'SIGKILL'] as const)('%s to the npx process stops the server: port closed, no process left', async (signal) => {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-npx-'));
    const served = await startUnderNpx(['serve', '--http', '127.0.0.1:0', '--store', `sqlite:${join(dir, 'tasks.db')}`], ROOT);
    try {
      expect((await fetch(served.url.replace(/\/mcp$/, '/healthz'))).status).toBe(200);
      const stopped = await stopsWithItsLauncher(served, signal);
      expect(stopped.remaining).toEqual([]);
      expect(stopped.portOpen).toBe(false);
      expect(served.stderr()).toMatch(/"reason":"launcher exited".*"msg":"stopping"/);
    } finally {
      served.kill();
    }
  });
});
