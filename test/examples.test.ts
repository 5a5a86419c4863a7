import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';
import { spawnServe } from './support/serve-process.js';

function runNode(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('examples/export-client.mjs', () => {
  it('runs a whole task session against `tasklatch serve` as the README shows', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tasklatch-example-'));
    const serve = await spawnServe([], { cwd });
    try {
      const run = await runNode([join(ROOT, 'examples/export-client.mjs'), serve.url]);
      expect(run.out).toMatch(/created: \S+ working/);
      expect(run.out).toMatch(/status: completed/);
      expect(run.out).toMatch(/result: \{"file":".*\.csv","rows":500,"sha256":"[0-9a-f]{64}"\}/);
      expect(run.code).toBe(0);
    } finally {
      await serve.stop();
    }
  });
});

describe('examples/tasks-2026-client.mjs', () => {
  it('runs a whole 2026-07-28 task session against `tasklatch serve` as the README shows', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tasklatch-example-'));
    const serve = await spawnServe([], { cwd });
    try {
      const run = await runNode([join(ROOT, 'examples/tasks-2026-client.mjs'), serve.url]);
      expect(run.out).toMatch(/versions: 2026-07-28 \| tasks extension: true/);
      expect(run.out).toMatch(/created: \S+ working/);
      expect(run.out).toMatch(/retry returns the same task: true/);
      expect(run.out).toMatch(/status: completed/);
      expect(run.out).toMatch(/result: \{"file":".*\.csv","rows":500,"sha256":"[0-9a-f]{64}"\}/);
      expect(run.code).toBe(0);
    } finally {
      await serve.stop();
    }
  });
});
