import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/sqlite/connection.js';
import type { SqliteDatabase } from '../../src/store/sqlite/driver.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { WriteBatcher } from '../../src/store/sqlite/write-batcher.js';
import { pgAdmission, PG_NOW } from '../support/records.js';

/**
 * The writes of one turn of the event loop commit together, each in a savepoint: one that throws
 * fails alone, a transaction that cannot be had fails them all and stores none, and every caller
 * is answered after the commit.
 */
describe('SQLite writes of one turn', () => {
  let dir: string;
  let db: SqliteDatabase;
  let other: SqliteDatabase;
  let transactions: number;
  /** `db` with its top-level transactions counted. */
  let counted: SqliteDatabase;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-write-turn-'));
    db = openSqlite(join(dir, 'turn.db'), { timeout: 50 });
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (x INTEGER UNIQUE)');
    other = openSqlite(join(dir, 'turn.db'), { timeout: 50 });
    transactions = 0;
    counted = new Proxy(db, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (property === 'transaction') {
          return (fn: () => unknown) => {
            const made = (value as SqliteDatabase['transaction']).call(target, fn);
            return {
              deferred: () => made.deferred(),
              immediate: () => {
                if (!target.inTransaction) transactions++;
                return made.immediate();
              },
            };
          };
        }
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  });

  afterEach(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  const insert = (x: number) => () => db.prepare('INSERT INTO t (x) VALUES (?)').run(x).changes;
  const stored = () => (other.prepare('SELECT x FROM t ORDER BY x').all() as Array<{ x: number }>).map((row) => row.x);

  it('commits the writes of a turn in one transaction; one that throws fails alone', async () => {
    const batcher = new WriteBatcher(counted);
    const outcomes = await Promise.allSettled([batcher.run(insert(1)), batcher.run(insert(2)), batcher.run(insert(1)), batcher.run(insert(3))]);
    expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason).replace(/^.*UNIQUE.*$/, 'UNIQUE') : o.status))).toEqual([
      'fulfilled',
      'fulfilled',
      'UNIQUE',
      'fulfilled',
    ]);
    expect(transactions).toBe(1);
    expect(stored()).toEqual([1, 2, 3]);
    // A lone write is its own transaction, and the next turn another.
    await batcher.run(insert(4));
    expect(transactions).toBe(2);
  });

  it('answers each caller after the commit', async () => {
    const batcher = new WriteBatcher(db);
    const seen: number[][] = [];
    await Promise.all([1, 2, 3].map((x) => batcher.run(insert(x)).then(() => seen.push(stored()))));
    expect(seen).toEqual([
      [1, 2, 3],
      [1, 2, 3],
      [1, 2, 3],
    ]);
  });

  it('fails every write of the turn and stores none when the write lock cannot be had', async () => {
    const batcher = new WriteBatcher(db);
    other.exec('BEGIN IMMEDIATE');
    const outcomes = await Promise.allSettled([batcher.run(insert(1)), batcher.run(insert(2))]);
    other.exec('ROLLBACK');
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : o.status))).toEqual([
      'STORE_UNAVAILABLE',
      'STORE_UNAVAILABLE',
    ]);
    expect(stored()).toEqual([]);
  });

  it("through the store: a turn's admissions commit together and are answered when the store closes", async () => {
    const path = join(dir, 'tasks.db');
    const store = await SqliteStore.open(path);
    try {
      const asked = ['t-1', 't-2', 't-3'].map((taskId) => store.admit(pgAdmission({ taskId })));
      await store.close();
      expect((await Promise.all(asked)).map((o) => o.decision)).toEqual(['ACCEPT_TASK', 'ACCEPT_TASK', 'ACCEPT_TASK']);
      const reopened = await SqliteStore.open(path);
      const found = await Promise.all(['t-1', 't-2', 't-3'].map((taskId) => reopened.get({ authKey: 'tenant-a/alice', taskId, now: PG_NOW })));
      expect(found.map((o) => o.decision)).toEqual(['FOUND', 'FOUND', 'FOUND']);
      await reopened.close();
    } finally {
      await store.close();
    }
  });
});
