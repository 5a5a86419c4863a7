import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import {
  applyMigrations,
  pendingMigrations,
  readMigrationFiles,
  type AppliedMigration,
  type MigrationDialect,
  type MigrationFile,
} from '../../src/store/migrations.js';

// The planner both SQL stores share, without a database: file order, checksums, refusals.

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const file = (name: string, sql = `-- ${name}`): MigrationFile => ({ name, sql, checksum: sha(sql) });

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-migrations-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readMigrationFiles', () => {
  it('orders by number, not text, checksums each file and ignores other names', async () => {
    for (const name of ['10_ten.sql', '9_nine.sql', '002_two.sql', 'README.md', 'x_bad.sql', '011_eleven.sql.bak']) {
      await writeFile(join(dir, name), `-- ${name}`);
    }
    const files = await readMigrationFiles(pathToFileURL(`${dir}/`));
    expect(files.map((f) => f.name)).toEqual(['002_two.sql', '9_nine.sql', '10_ten.sql']);
    expect(files.map((f) => f.checksum)).toEqual(files.map((f) => sha(f.sql)));
  });
});

describe('pendingMigrations', () => {
  const files = [file('001_a.sql'), file('002_b.sql'), file('003_c.sql')];
  const rows: { name: string; applied: AppliedMigration[]; pending?: string[]; refused?: string }[] = [
    { name: 'fresh database', applied: [], pending: ['001_a.sql', '002_b.sql', '003_c.sql'] },
    { name: 'part applied', applied: [{ name: '001_a.sql', checksum: files[0]!.checksum }], pending: ['002_b.sql', '003_c.sql'] },
    { name: 'current', applied: files.map((f) => ({ name: f.name, checksum: f.checksum })), pending: [] },
    { name: 'recorded without checksum', applied: [{ name: '001_a.sql', checksum: null }], pending: ['002_b.sql', '003_c.sql'] },
    { name: 'text changed', applied: [{ name: '002_b.sql', checksum: 'edited' }], refused: '002_b.sql changed' },
    { name: 'unknown migration', applied: [{ name: '004_future.sql', checksum: 'x' }], refused: '004_future.sql' },
  ];
  it.each(rows)('$name', (row) => {
    if (row.refused === undefined) {
      expect(pendingMigrations(files, row.applied).map((f) => f.name)).toEqual(row.pending);
      return;
    }
    let error: unknown;
    try {
      pendingMigrations(files, row.applied);
    } catch (e) {
      error = e;
    }
    expect(isTasklatchError(error, 'SCHEMA_MISMATCH')).toBe(true);
    expect((error as Error).message).toContain(row.refused);
  });
});

describe('applyMigrations', () => {
  /** A ledger in memory; `events` shows the transactions and what ran in each. */
  function fakeDialect(scope: 'run' | 'file', ledger: AppliedMigration[], events: string[]): MigrationDialect {
    return {
      scope,
      async locked(work) {
        events.push('begin');
        const value = await work({
          readApplied: async () => ledger.map((r) => ({ ...r })),
          runFile: async (f) => {
            events.push(`run ${f.name}`);
            ledger.push({ name: f.name, checksum: scope === 'file' ? f.checksum : null });
          },
          recordChecksum: async (f) => {
            events.push(`checksum ${f.name}`);
            ledger.find((r) => r.name === f.name)!.checksum = f.checksum;
          },
          finish: async () => void events.push('finish'),
        });
        events.push('commit');
        return value;
      },
    };
  }
  const files = [file('001_a.sql'), file('002_b.sql')];

  it('run scope: one transaction applies every pending file, then fills in missing checksums', async () => {
    const events: string[] = [];
    const ledger: AppliedMigration[] = [];
    expect(await applyMigrations(files, fakeDialect('run', ledger, events))).toEqual(['001_a.sql', '002_b.sql']);
    expect(events).toEqual(['begin', 'run 001_a.sql', 'run 002_b.sql', 'checksum 001_a.sql', 'checksum 002_b.sql', 'finish', 'commit']);
    expect(ledger.every((r) => r.checksum !== null)).toBe(true);
  });

  it('file scope: one transaction per file, re-planned each time, then a closing check', async () => {
    const events: string[] = [];
    const ledger: AppliedMigration[] = [{ name: '001_a.sql', checksum: files[0]!.checksum }];
    expect(await applyMigrations(files, fakeDialect('file', ledger, events))).toEqual(['002_b.sql']);
    expect(events).toEqual(['begin', 'run 002_b.sql', 'commit', 'begin', 'commit', 'begin', 'finish', 'commit']);
  });
});
