import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, runCli } from '../support/cli.js';
import { spawnServe } from '../support/serve-process.js';

// The store URL from the environment (TASKLATCH_STORE, then DATABASE_URL), and `--version`,
// through the built binary. The machine's PostgreSQL trusts local connections, so a URL with a
// password connects, and the password must show nowhere in what the process prints.

const PASSWORD = 'Sup3rSecretPw';
/** A schema of this run's own: two runs at once must not migrate one schema under each other. */
const SCHEMA = `store_env_${process.pid}_${Date.now().toString(36)}`;
const PG = `postgres://postgres:${PASSWORD}@127.0.0.1:5432/test?schema=${SCHEMA}`;
/** Neither variable leaks in from the machine running the tests. */
const CLEAN = { TASKLATCH_STORE: '', DATABASE_URL: '' };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-store-env-'));
});
afterAll(async () => {
  const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  } finally {
    await client.end();
  }
});

describe('the store URL from the environment', () => {
  it('migrate takes TASKLATCH_STORE, else DATABASE_URL, and --store before both', async () => {
    const a = join(dir, 'a.db');
    const b = join(dir, 'b.db');
    const c = join(dir, 'c.db');
    const onlyDatabaseUrl = await runCli(['migrate'], { env: { ...CLEAN, DATABASE_URL: `sqlite:${b}` } });
    expect(onlyDatabaseUrl.code).toBe(0);
    expect(existsSync(b)).toBe(true);
    const both = await runCli(['migrate'], { env: { TASKLATCH_STORE: `sqlite:${a}`, DATABASE_URL: `sqlite:${join(dir, 'not-this.db')}` } });
    expect(both.code).toBe(0);
    expect(both.stdout).toContain(a);
    expect(existsSync(a)).toBe(true);
    expect(existsSync(join(dir, 'not-this.db'))).toBe(false);
    const flag = await runCli(['migrate', '--store', `sqlite:${c}`], { env: { TASKLATCH_STORE: `sqlite:${join(dir, 'not-this.db')}` } });
    expect(flag.code).toBe(0);
    expect(existsSync(c)).toBe(true);
    expect(existsSync(join(dir, 'not-this.db'))).toBe(false);
  });

  it('tasks, prune and doctor read the store the environment names', async () => {
    const path = join(dir, 'ops.db');
    expect((await runCli(['migrate', '--store', `sqlite:${path}`])).code).toBe(0);
    const env = { ...CLEAN, TASKLATCH_STORE: `sqlite:${path}` };
    const stats = await runCli(['tasks', 'stats', '--json'], { env });
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.stdout)).toBeTypeOf('object');
    const prune = await runCli(['prune', '--dry-run'], { env });
    expect(prune.code).toBe(0);
    expect(prune.stdout).toContain(path);
    const doctor = await runCli(['doctor', '--json'], { env: { ...CLEAN, DATABASE_URL: `sqlite:${path}` } });
    expect(doctor.code).toBe(0);
    // A missing file is a failing check, not the default store: the variable was used.
    const missing = await runCli(['tasks', 'stats'], { env: { ...CLEAN, TASKLATCH_STORE: `sqlite:${join(dir, 'missing.db')}` } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing.db');
  });

  it('serve logs the store from TASKLATCH_STORE without its password', async () => {
    const serve = await spawnServe([], { env: { ...CLEAN, TASKLATCH_STORE: PG, TASKLATCH_LOG_LEVEL: 'info' } });
    try {
      const up = await fetch(serve.url.replace(/\/mcp$/, '/readyz'));
      expect(up.status).toBe(200);
    } finally {
      await serve.stop();
    }
    expect(serve.stderr()).toContain('postgres://postgres:***@127.0.0.1:5432');
    expect(serve.stderr()).not.toContain(PASSWORD);
  });

  it('worker, migrate and doctor take DATABASE_URL, and print no password', async () => {
    const migrate = await runCli(['migrate'], { env: { ...CLEAN, DATABASE_URL: PG } });
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toContain('postgres://postgres:***@');
    expect(migrate.stdout + migrate.stderr).not.toContain(PASSWORD);
    const doctor = await runCli(['doctor'], { env: { ...CLEAN, DATABASE_URL: PG } });
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain('127.0.0.1:5432');
    expect(doctor.stdout + doctor.stderr).not.toContain(PASSWORD);

    const child = spawn(process.execPath, [BIN, 'worker', '--exports', join(dir, 'exports')], {
      cwd: ROOT,
      env: { ...process.env, ...CLEAN, DATABASE_URL: PG, TASKLATCH_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker did not start: ${out}`)), 60_000);
      child.stdout.on('data', () => {
        if (out.includes('running for app')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('postgres://postgres:***@127.0.0.1:5432');
    expect(out).not.toContain(PASSWORD);
  });
});

describe('tasklatch --version', () => {
  it('prints the version of package.json and exits 0, with -v too', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const run = await runCli([flag]);
      expect(run.code).toBe(0);
      expect(run.stdout.trim()).toBe(version);
    }
  });
});
