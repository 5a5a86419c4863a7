import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { AdmitInput } from '../../src/store/types.js';
import { pgAdmission, PG_NOW } from '../support/records.js';

/** Whether this process has `path` mapped into its memory now (a line of /proc/self/maps names it). */
function mapped(path: string): boolean {
  return readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .some((line) => line.endsWith(` ${path}`));
}

/** One task admitted into `store`: its admission (`pgAdmission`, a task of any store). */
async function admitOne(store: SqliteStore): Promise<AdmitInput> {
  const input = pgAdmission();
  expect((await store.admit(input)).decision).toBe('ACCEPT_TASK');
  return input;
}

describe('the SQLite store reads its file through a memory map', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-mmap-'));
  });
  afterEach(async () => {
    delete process.env.TASKLATCH_SQLITE_MMAP_BYTES;
    await rm(dir, { recursive: true, force: true });
  });

  it('by default: the file is mapped once read, and a task written by another connection is read through it', async () => {
    const path = join(dir, 'tasks.db');
    const reader = await SqliteStore.open(path);
    const writer = await SqliteStore.open(path);
    try {
      // SQLite caps the size at its own largest; a driver built without maps reads 0 here.
      const size = Number(reader.db.pragma('mmap_size', { simple: true }));
      expect(size).toBeGreaterThan(0);
      const { taskId, authKey } = await admitOne(writer);
      // Copied from the log into the file, as a checkpoint soon does: pages still in the log are read from it.
      writer.db.pragma('wal_checkpoint(TRUNCATE)');
      const found = await reader.get({ authKey, taskId, now: PG_NOW });
      expect(found.record?.taskId).toBe(taskId);
      expect(found.record?.status).toBe('working');
      expect(mapped(path)).toBe(true);
    } finally {
      await writer.close();
      await reader.close();
    }
    // Closed, the map goes with the connection.
    expect(mapped(path)).toBe(false);
  });

  it('mmapBytes 0 reads by read calls only: nothing of the file is mapped', async () => {
    const path = join(dir, 'tasks.db');
    const store = await SqliteStore.open(path, { mmapBytes: 0 });
    try {
      expect(Number(store.db.pragma('mmap_size', { simple: true }))).toBe(0);
      const { taskId, authKey } = await admitOne(store);
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      const found = await store.get({ authKey, taskId, now: PG_NOW });
      expect(found.record?.status).toBe('working');
      expect(mapped(path)).toBe(false);
    } finally {
      await store.close();
    }
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('mmapBytes %s is refused before anything is opened or made', async (mmapBytes) => {
    const path = join(dir, 'sub', 'tasks.db');
    await expect(SqliteStore.open(path, { mmapBytes })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(existsSync(join(dir, 'sub'))).toBe(false);
  });

  it('TASKLATCH_SQLITE_MMAP_BYTES sets it for a store opened from its URL, and a value that is no size is refused naming the variable', async () => {
    const path = join(dir, 'tasks.db');
    process.env.TASKLATCH_SQLITE_MMAP_BYTES = '0';
    const store = (await openStore(`sqlite:${path}`)) as SqliteStore;
    try {
      expect(Number(store.db.pragma('mmap_size', { simple: true }))).toBe(0);
    } finally {
      await store.close();
    }
    for (const bad of ['-1', '1.5', 'lots', '1e9']) {
      process.env.TASKLATCH_SQLITE_MMAP_BYTES = bad;
      await expect(openStore(`sqlite:${join(dir, 'other.db')}`)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringContaining('TASKLATCH_SQLITE_MMAP_BYTES') as string,
      });
    }
    expect(existsSync(join(dir, 'other.db'))).toBe(false);
  });
});
