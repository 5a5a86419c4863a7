import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { freshPostgresUrl, testServerUrl } from '../support/postgres.js';

// `tasklatch doctor` looks and says what to fix; it creates and migrates nothing.

describe('tasklatch doctor', () => {
  it('on SQLite: a missing file is unhealthy and stays missing; a migrated one is healthy', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'tasklatch-doctor-')), 'tasks.db');
    const missing = await runCli(['doctor', '--store', `sqlite:${path}`]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/^FAIL\s+store\s+SQLite store at .*: no such file$/m);
    expect(missing.stdout).toMatch(/^\s+fix: /m);
    expect(existsSync(path)).toBe(false);
    expect((await runCli(['migrate', '--store', `sqlite:${path}`])).code).toBe(0);
    const healthy = await runCli(['doctor', '--store', `sqlite:${path}`, '--json']);
    expect(healthy.code).toBe(0);
    expect(JSON.parse(healthy.stdout)).toEqual({
      ready: true,
      checks: [
        { name: 'store', ok: true, detail: `SQLite store at ${path} answers` },
        { name: 'driver', ok: true, detail: expect.stringMatching(/^(better-sqlite3|node:sqlite)$/) as unknown },
        { name: 'migrations', ok: true, detail: 'schema current' },
      ],
    });
  });

  it('on PostgreSQL: names the migrations not applied and how to apply them, without applying them', async () => {
    const url = await freshPostgresUrl('doctor');
    const schema = new URL(url).searchParams.get('schema')!;
    const pending = await runCli(['doctor', '--store', url]);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toMatch(/^FAIL\s+migrations\s+not applied: 001_init\.sql, /m);
    expect(pending.stdout).toContain('fix: run: tasklatch migrate --store');
    expect(pending.stdout).toMatch(/^ok\s+notifications\s+LISTEN works$/m);
    const client = new pg.Client({ connectionString: testServerUrl() });
    await client.connect();
    try {
      const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      expect(found.rowCount).toBe(0);
    } finally {
      await client.end();
    }
    expect((await runCli(['migrate', '--store', url])).code).toBe(0);
    const healthy = await runCli(['doctor', '--store', url]);
    expect(healthy.code).toBe(0);
    expect(healthy.stdout.trim().split('\n').at(-1)).toBe('healthy');
  });

  it('refuses a store it cannot look at in one line, exit 2', async () => {
    for (const store of ['memory', 'redis://x', 'postgres://[bad']) {
      const run = await runCli(['doctor', '--store', store]);
      expect(run.code, store).toBe(2);
      expect(run.stderr.trim().split('\n'), store).toHaveLength(1);
    }
  });
});
