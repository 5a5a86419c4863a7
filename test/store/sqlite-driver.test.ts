import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqliteDriver } from '../../src/store/sqlite/connection.js';
import { openNodeSqlite } from '../../src/store/sqlite/node-driver.js';
import { BIN } from '../support/cli.js';

const HAS_NODE_SQLITE = isBuiltin('node:sqlite');

/** Runs the built CLI with `env` added; resolves with its exit code and error output. */
function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env, TASKLATCH_LOG_LEVEL: 'silent' } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('the SQLite driver', () => {
  it(`runs on this Node.js (${process.versions.node}) with a driver it names`, () => {
    const { name } = sqliteDriver();
    console.log(`Node.js ${process.versions.node}: SQLite driver ${name}`);
    expect(['better-sqlite3', 'node:sqlite']).toContain(name);
    // Node 20 has no node:sqlite: there the native module is the only driver.
    if (!HAS_NODE_SQLITE) expect(name).toBe('better-sqlite3');
  });

  it('a driver that cannot be had is one line at start, exit 2, no retries', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-driver-'));
    // Ask for the driver this Node lacks, or for a name that is none.
    const env = HAS_NODE_SQLITE ? { TASKLATCH_SQLITE_DRIVER: 'no-such-driver' } : { TASKLATCH_SQLITE_DRIVER: 'node:sqlite' };
    // A store that is down is waited for (here an hour, longer than the test): a missing driver is not.
    const out = await runCli(['serve', '--http', '127.0.0.1:0', '--wait-for-store', '3600000', '--store', `sqlite:${join(dir, 'tasks.db')}`], env);
    expect(out.code).toBe(2);
    expect(out.stderr.trim().split('\n')).toHaveLength(1);
    expect(out.stderr).toMatch(
      HAS_NODE_SQLITE ? /TASKLATCH_SQLITE_DRIVER must be better-sqlite3 or node:sqlite/ : /no SQLite driver for Node\.js .*node:sqlite is not in this Node\.js/,
    );
  });
});

describe.skipIf(!HAS_NODE_SQLITE)('the node:sqlite adapter', () => {
  it('keeps better-sqlite3’s transaction semantics: modes, savepoints inside, rollback on a throw', async () => {
    const db = openNodeSqlite(':memory:', {});
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
    const insert = db.prepare('INSERT INTO t (n) VALUES (@n)');
    db.transaction(() => {
      insert.run({ n: 1, unused: 'ignored as better-sqlite3 ignores it' });
      expect(() =>
        db.transaction(() => {
          insert.run({ n: 2 });
          throw new Error('inner');
        })(),
      ).toThrow('inner');
      expect(db.inTransaction).toBe(true);
    }).immediate();
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT n FROM t ORDER BY n').all()).toEqual([{ n: 1 }]);
    expect(() => db.transaction(() => insert.run({ n: 1 })).deferred()).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' }));
    expect(db.pragma('foreign_keys', { simple: true })).toBe(0);
    db.close();
    expect(db.open).toBe(false);
  });

  it('reports a lock held by another connection as SQLITE_BUSY', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'tasklatch-busy-')), 'busy.db');
    const a = openNodeSqlite(path, { timeout: 10 });
    const b = openNodeSqlite(path, { timeout: 10 });
    a.exec('CREATE TABLE t (n INTEGER)');
    a.exec('BEGIN IMMEDIATE');
    expect(() => b.transaction(() => b.prepare('INSERT INTO t VALUES (1)').run()).immediate()).toThrow(
      expect.objectContaining({ code: expect.stringMatching(/^SQLITE_BUSY/) as unknown }),
    );
    a.exec('ROLLBACK');
    a.close();
    b.close();
  });
});
