import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';

const OWN = join(ROOT, 'test/fixtures/replay-corners.json');
const PUBLIC = join(ROOT, '../shared/contract/replay-32.json');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-stores-'));
});

const last = (text: string) => text.trimEnd().split('\n').at(-1);

describe.each([
  { name: 'sqlite', url: async () => `sqlite:${join(dir, `replay-${Math.random()}.db`)}` },
  { name: 'postgres', url: () => freshPostgresUrl('cli_replay') },
])('replay and migrate through $name', ({ url }) => {
  it('migrates a fresh store once, then reports it up to date', async () => {
    const store = await url();
    const first = await runCli(['migrate', '--store', store]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied 001_init\.sql/);
    const second = await runCli(['migrate', '--store', store]);
    expect(second.stdout).toMatch(/schema is up to date/);
  });

  it('replays the project fixture twice into the same store with every decision matching', async () => {
    const store = await url();
    for (let i = 0; i < 2; i++) {
      const run = await runCli(['replay', OWN, '--store', store]);
      expect(run.stderr).toBe('');
      expect(last(run.stdout)).toMatch(/^(\d+) passed, 0 failed$/);
      expect(run.code).toBe(0);
    }
  });

  it.skipIf(!existsSync(PUBLIC))('replays the public contract fixture', async () => {
    const run = await runCli(['replay', PUBLIC, '--store', await url(), '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ passed: 32, failed: 0 });
  });
});

describe('store errors', () => {
  it('names an unreachable PostgreSQL server without its password', async () => {
    const run = await runCli(['migrate', '--store', 'postgres://postgres:secret@127.0.0.1:1/test']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/127\.0\.0\.1:1/);
    expect(run.stderr).not.toMatch(/secret/);
  });
});
