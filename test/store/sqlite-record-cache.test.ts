import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/sqlite/connection.js';
import type { SqliteDatabase } from '../../src/store/sqlite/driver.js';
import { ReadBatcher } from '../../src/store/sqlite/read-batcher.js';
import { RecordCache } from '../../src/store/sqlite/record-cache.js';
import type { TaskRow } from '../../src/store/sqlite/row.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { record, T0 } from '../support/records.js';

const AUTH = 'tenant-a/alice';

/**
 * A row kept by `get` is answered again only while the file is as it was when the row was read:
 * any commit of another connection, any write of this connection by any path, and a write
 * rolled back all make it stale; the read audit's own upserts do not.
 */
describe('SQLite record cache', () => {
  let dir: string;
  let path: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-record-cache-'));
    path = join(dir, 'tasks.db');
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('stamps', () => {
    let store: SqliteStore;
    let db: SqliteDatabase;
    let other: SqliteDatabase;
    let cache: RecordCache;
    const row = () => db.prepare('SELECT * FROM tasks WHERE task_id = ?').get('t-1') as TaskRow;

    beforeEach(async () => {
      store = await SqliteStore.open(path);
      await store.seed([record({ taskId: 't-1' })]);
      db = openSqlite(path);
      other = openSqlite(path);
      cache = new RecordCache(db);
    });

    afterEach(async () => {
      db.close();
      other.close();
      await store.close();
    });

    it('answers a kept row while nothing changed', () => {
      const stamp = cache.stamp();
      cache.set(row(), stamp);
      expect(cache.get('t-1', cache.stamp())?.task_id).toBe('t-1');
      expect(cache.get('t-2', cache.stamp())).toBeUndefined();
    });

    it('goes stale when another connection commits, whatever it wrote', () => {
      cache.set(row(), cache.stamp());
      other
        .prepare(
          "INSERT INTO task_read_audit (task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, correlation_id) VALUES ('t-9', 'x', 'read', 'RETURN_STATUS', 0, 1, 0, 0, 'c')",
        )
        .run();
      expect(cache.get('t-1', cache.stamp())).toBeUndefined();
    });

    it('goes stale when this connection writes a row by any path, and when a write is rolled back', () => {
      cache.set(row(), cache.stamp());
      db.prepare("UPDATE tasks SET status_message = 'moved' WHERE task_id = 't-1'").run();
      expect(cache.get('t-1', cache.stamp())).toBeUndefined();

      cache.set(row(), cache.stamp());
      db.exec('BEGIN');
      db.prepare("UPDATE tasks SET status_message = 'never' WHERE task_id = 't-1'").run();
      db.exec('ROLLBACK');
      expect(cache.get('t-1', cache.stamp())).toBeUndefined();
    });

    it('keeps its rows across writes declared outside tasks, and only those', () => {
      cache.set(row(), cache.stamp());
      cache.outsideTasks(() =>
        db
          .prepare(
            "INSERT INTO task_read_audit (task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, correlation_id) VALUES ('t-1', 'x', 'read', 'RETURN_STATUS', 0, 1, 0, 0, 'c')",
          )
          .run(),
      );
      expect(cache.get('t-1', cache.stamp())?.task_id).toBe('t-1');
      db.prepare("UPDATE tasks SET status_message = 'moved' WHERE task_id = 't-1'").run();
      expect(cache.get('t-1', cache.stamp())).toBeUndefined();
    });

    it('neither keeps nor answers inside a transaction', () => {
      cache.set(row(), cache.stamp());
      db.exec('BEGIN');
      expect(cache.stamp()).toBeNull();
      expect(cache.get('t-1', cache.stamp())).toBeUndefined();
      cache.set(row(), cache.stamp());
      db.exec('COMMIT');
      expect(cache.get('t-1', cache.stamp())?.task_id).toBe('t-1');
    });

    it('keeps at most its bound of rows, dropping the oldest read', () => {
      const small = new RecordCache(db, 2);
      const stamp = small.stamp();
      for (const id of ['a', 'b', 'c']) small.set({ ...row(), task_id: id }, stamp);
      expect(['a', 'b', 'c'].map((id) => small.get(id, small.stamp())?.task_id)).toEqual([undefined, 'b', 'c']);
    });
  });

  describe('the reads of one turn', () => {
    it('take one stamp, after the last of them was asked for', async () => {
      const stamps: number[] = [];
      let clock = 0;
      const batcher = new ReadBatcher(
        () => {
          stamps.push(clock);
          return { version: 1, changes: clock };
        },
        (ref, stamp) => ({ decision: 'FOUND', record: record({ taskId: ref.taskId, version: stamp?.changes ?? -1 }) }),
      );
      const first = batcher.get({ authKey: AUTH, taskId: 't-1', now: T0 });
      clock = 1;
      const rest = [batcher.get({ authKey: AUTH, taskId: 't-2', now: T0 }), batcher.get({ authKey: AUTH, taskId: 't-3', now: T0 })];
      clock = 2;
      const answers = await Promise.all([first, ...rest]);
      expect(stamps).toEqual([2]);
      expect(answers.map((a) => [a.record?.taskId, a.record?.version])).toEqual([
        ['t-1', 2],
        ['t-2', 2],
        ['t-3', 2],
      ]);
      await batcher.get({ authKey: AUTH, taskId: 't-1', now: T0 });
      expect(stamps).toEqual([2, 2]);
    });

    it('fail alone when their read throws, and all when the stamp does', async () => {
      let stampFails = false;
      const batcher = new ReadBatcher(
        () => {
          if (stampFails) throw new Error('disk I/O error');
          return null;
        },
        (ref) => {
          if (ref.taskId === 'bad') throw new Error('bad row');
          return { decision: 'NOT_FOUND', record: null };
        },
      );
      const answers = await Promise.allSettled([
        batcher.get({ authKey: AUTH, taskId: 'bad', now: T0 }),
        batcher.get({ authKey: AUTH, taskId: 't-1', now: T0 }),
      ]);
      expect(answers.map((a) => a.status)).toEqual(['rejected', 'fulfilled']);
      stampFails = true;
      const failed = await Promise.allSettled([batcher.get({ authKey: AUTH, taskId: 't-1', now: T0 }), batcher.get({ authKey: AUTH, taskId: 't-2', now: T0 })]);
      expect(failed.map((a) => a.status)).toEqual(['rejected', 'rejected']);
    });

    it('see a commit of another connection that lands after they were asked for, and are answered when the store closes', async () => {
      const store = await SqliteStore.open(path);
      const other = openSqlite(path);
      try {
        await store.seed([record({ taskId: 't-1', statusMessage: 'before' })]);
        expect((await store.get({ authKey: AUTH, taskId: 't-1', now: T0 })).record?.statusMessage).toBe('before');
        // Kept now; a read asked for, then another process's commit, in the same turn.
        const asked = store.get({ authKey: AUTH, taskId: 't-1', now: T0 });
        other.prepare("UPDATE tasks SET status_message = 'after', version = version + 1 WHERE task_id = 't-1'").run();
        expect((await asked).record?.statusMessage).toBe('after');
        const pending = store.get({ authKey: AUTH, taskId: 't-1', now: T0 });
        await store.close();
        expect((await pending).record?.statusMessage).toBe('after');
      } finally {
        other.close();
        await store.close();
      }
    });
  });

  describe('through the store', () => {
    it('never answers older than a write acknowledged by another handle on the file', async () => {
      const reader = await SqliteStore.open(path);
      const writer = await SqliteStore.open(path);
      try {
        await writer.seed([record({ taskId: 't-1', statusMessage: 'step 0' })]);
        let version = 1;
        for (let round = 1; round <= 200; round++) {
          // Read twice (the second from the kept row) with each read audited, then write elsewhere.
          for (let i = 0; i < 2; i++) {
            const seen = await reader.get({ authKey: AUTH, taskId: 't-1', now: T0 });
            expect(seen.record?.version).toBe(version);
            await reader.recordDecision({ at: T0, surface: 'read', decision: 'RETURN_STATUS', authKey: AUTH, taskId: 't-1', correlationId: `c-${round}` });
          }
          const moved = await writer.transition({
            taskId: 't-1',
            authKey: AUTH,
            write: { status: 'working', statusMessage: `step ${round}`, expectedVersion: version },
            correlationId: `w-${round}`,
            now: T0,
          });
          expect(moved.decision).toBe('APPLY_TRANSITION');
          version = moved.record?.version ?? Number.NaN;
          const seen = await reader.get({ authKey: AUTH, taskId: 't-1', now: T0 });
          expect([seen.record?.version, seen.record?.statusMessage]).toEqual([version, `step ${round}`]);
        }
      } finally {
        await reader.close();
        await writer.close();
      }
    });

    it("answers a write of the store's own connection at once, and checks the caller and the clock on a kept row", async () => {
      const store = await SqliteStore.open(path);
      try {
        await store.seed([record({ taskId: 't-1' })]);
        expect((await store.get({ authKey: AUTH, taskId: 't-1', now: T0 })).record?.status).toBe('working');
        const done = await store.transition({
          taskId: 't-1',
          authKey: AUTH,
          write: { status: 'completed', expectedVersion: 1, result: { content: [] } },
          correlationId: 'c',
          now: T0,
        });
        expect(done.decision).toBe('APPLY_TRANSITION');
        expect((await store.get({ authKey: AUTH, taskId: 't-1', now: T0 })).record?.status).toBe('completed');
        // Kept now; another caller and a later clock are told what the SELECT would tell them.
        expect((await store.get({ authKey: 'tenant-b/bob', taskId: 't-1', now: T0 })).decision).toBe('BLOCK_AUTH');
        expect((await store.get({ authKey: AUTH, taskId: 't-1', now: T0 + 48 * 3_600_000 })).decision).toBe('BLOCK_EXPIRED');
      } finally {
        await store.close();
      }
    });
  });
});
