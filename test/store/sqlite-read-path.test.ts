import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openGuard } from '../../src/service/guard.js';
import { openSqlite } from '../../src/store/sqlite/connection.js';
import type { SqliteDatabase } from '../../src/store/sqlite/driver.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { ALL_CAPS, record, T0 } from '../support/records.js';

/**
 * A poll is a read: it must not need the file's write lock. Its audit line is stored after the
 * reply, with the other lines of the moment, once the lock is free.
 */
describe('SQLite read path', () => {
  let dir: string;
  let store: SqliteStore;
  let other: SqliteDatabase;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-read-path-'));
    store = await SqliteStore.open(join(dir, 'tasks.db'), { busyTimeoutMs: 100 });
    await store.seed([record({ taskId: 't-1' })]);
    other = openSqlite(join(dir, 'tasks.db'));
  });

  afterEach(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers tasks/get while another process holds the write lock, and counts its reads after', async () => {
    const guard = openGuard({ store, capabilities: ALL_CAPS, clock: () => T0 });
    other.exec('BEGIN IMMEDIATE');
    const reads = await Promise.all(Array.from({ length: 5 }, () => guard.requestor.read({ auth: 'tenant-a/alice', method: 'tasks/get', taskId: 't-1' })));
    expect(reads.map((r) => r.decision)).toEqual(Array(5).fill('RETURN_STATUS'));
    other.exec('COMMIT');
    const trail = await store.auditTrail({ taskId: 't-1' });
    expect(trail.filter((line) => line.surface === 'read' && line.decision === 'RETURN_STATUS').map((row) => row.count)).toEqual([5]);
  });

  it('classifies a miss in one snapshot, as before', async () => {
    const guard = openGuard({ store, capabilities: ALL_CAPS, clock: () => T0 });
    expect((await guard.requestor.read({ auth: 'tenant-b/bob', method: 'tasks/get', taskId: 't-1' })).decision).toBe('BLOCK_AUTH');
    expect((await guard.requestor.read({ auth: 'tenant-a/alice', method: 'tasks/get', taskId: 't-2' })).decision).toBe('NOT_FOUND');
    const expired = openGuard({ store, capabilities: ALL_CAPS, clock: () => T0 + 48 * 3_600_000 });
    expect((await expired.requestor.read({ auth: 'tenant-a/alice', method: 'tasks/get', taskId: 't-1' })).decision).not.toBe('RETURN_STATUS');
  });
});
