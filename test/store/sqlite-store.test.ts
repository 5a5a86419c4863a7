import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { migrateSqlite } from '../../src/store/sqlite/migrate.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AdmitInput } from '../../src/store/types.js';
import { makeRacePlan, raceSeedRecord, SEED_VERSION, type RaceReport } from '../support/sqlite-race-plan.js';
import { distBuilt, runChildren, writeChildScript, DIST_STORE_URL } from '../support/sqlite-race-run.js';

/** The schema a fresh file must have after migrating from zero: [column, type, notnull, pk]. */
const EXPECTED_COLUMNS: Record<string, [string, string, number, number][]> = {
  tasks: [
    ['task_id', 'TEXT', 0, 1],
    ['auth_key', 'TEXT', 1, 0],
    ['tool_name', 'TEXT', 0, 0],
    ['status', 'TEXT', 1, 0],
    ['status_message', 'TEXT', 0, 0],
    ['version', 'INTEGER', 1, 0],
    ['created_at_ms', 'INTEGER', 1, 0],
    ['last_updated_at_ms', 'INTEGER', 1, 0],
    ['ttl_ms', 'INTEGER', 0, 0],
    ['expires_at_ms', 'INTEGER', 0, 0],
    ['poll_interval_ms', 'INTEGER', 0, 0],
    ['request_digest', 'TEXT', 0, 0],
    ['idempotency_key', 'TEXT', 0, 0],
    ['request', 'TEXT', 0, 0],
    ['cancel_requested', 'INTEGER', 1, 0],
    ['result', 'TEXT', 0, 0],
    ['result_digest', 'TEXT', 0, 0],
    ['correlation_id', 'TEXT', 0, 0],
    ['attempt', 'INTEGER', 1, 0],
    ['lease_owner', 'TEXT', 0, 0],
    ['lease_expires_at_ms', 'INTEGER', 0, 0],
  ],
  task_outbox: [
    ['id', 'INTEGER', 0, 1],
    ['task_id', 'TEXT', 1, 0],
    ['created_at_ms', 'INTEGER', 1, 0],
    ['available_at_ms', 'INTEGER', 1, 0],
    ['claimed_by', 'TEXT', 0, 0],
    ['lease_expires_at_ms', 'INTEGER', 0, 0],
    ['attempt', 'INTEGER', 1, 0],
    ['done_at_ms', 'INTEGER', 0, 0],
  ],
  task_audit: [
    ['id', 'INTEGER', 0, 1],
    ['at_ms', 'INTEGER', 1, 0],
    ['surface', 'TEXT', 1, 0],
    ['decision', 'TEXT', 1, 0],
    ['auth_key', 'TEXT', 1, 0],
    ['task_id', 'TEXT', 0, 0],
    ['correlation_id', 'TEXT', 1, 0],
    ['status', 'TEXT', 0, 0],
    ['version', 'INTEGER', 0, 0],
    ['detail', 'TEXT', 0, 0],
  ],
  tasklatch_meta: [
    ['key', 'TEXT', 0, 1],
    ['value', 'TEXT', 1, 0],
  ],
  tasklatch_migrations: [
    ['name', 'TEXT', 0, 1],
    ['checksum', 'TEXT', 1, 0],
    ['applied_at_ms', 'INTEGER', 1, 0],
  ],
};

/** Named indexes as [name, table, partial?]; SQLite's own autoindexes are checked through index_list. */
const EXPECTED_INDEXES = [
  ['task_audit_task_idx', 'task_audit', 'CREATE INDEX task_audit_task_idx ON task_audit (task_id, id)'],
  ['task_outbox_available_idx', 'task_outbox', 'CREATE INDEX task_outbox_available_idx ON task_outbox (available_at_ms) WHERE done_at_ms IS NULL'],
  ['tasks_auth_created_idx', 'tasks', 'CREATE INDEX tasks_auth_created_idx ON tasks (auth_key, created_at_ms, task_id)'],
  ['tasks_expires_idx', 'tasks', 'CREATE INDEX tasks_expires_idx ON tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL'],
];

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-sqlite-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SQLite migrations', () => {
  it('migrates a fresh file to the expected schema', async () => {
    const store = await SqliteStore.open(join(dir, 'fresh.db'));
    const { db } = store;
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all();
    expect(tables).toEqual(Object.keys(EXPECTED_COLUMNS).sort());
    for (const [table, columns] of Object.entries(EXPECTED_COLUMNS)) {
      const info = db.pragma(`table_info(${table})`) as { name: string; type: string; notnull: number; pk: number }[];
      expect(info.map((c) => [c.name, c.type, c.notnull, c.pk]), table).toEqual(columns);
    }
    const indexes = db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").raw().all();
    expect(indexes.map((row) => (row as string[]).map((v) => v.replace(/\s+/g, ' ')))).toEqual(EXPECTED_INDEXES);
    const unique = (db.pragma('index_list(tasks)') as { name: string; unique: number; origin: string }[]).filter((i) => i.origin === 'u');
    expect(unique).toHaveLength(1);
    expect((db.pragma(`index_info(${unique[0]!.name})`) as { name: string }[]).map((c) => c.name)).toEqual(['auth_key', 'idempotency_key']);
    const fks = db.pragma('foreign_key_list(task_outbox)') as { table: string; from: string; to: string; on_delete: string }[];
    expect(fks.map((f) => [f.table, f.from, f.to, f.on_delete])).toEqual([['tasks', 'task_id', 'task_id', 'CASCADE']]);
    expect(db.prepare('SELECT name FROM tasklatch_migrations').pluck().all()).toEqual(['001_init.sql']);
    await store.close();
  });

  it('is idempotent: a second run applies nothing and keeps the secret', async () => {
    const path = join(dir, 'again.db');
    const first = await SqliteStore.open(path);
    const secret = Buffer.from(await first.sharedSecret()).toString('hex');
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(await migrateSqlite(first.db)).toEqual([]);
    await first.close();
    const second = await SqliteStore.open(path);
    expect(Buffer.from(await second.sharedSecret()).toString('hex')).toBe(secret);
    expect(second.db.prepare('SELECT count(*) FROM tasklatch_migrations').pluck().get()).toBe(1);
    await second.close();
  });

  it('opens in WAL mode with foreign keys on and the busy timeout set', async () => {
    const store = await SqliteStore.open(join(dir, 'nested', 'dirs', 'wal.db'), { busyTimeoutMs: 1234 });
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(store.db.pragma('busy_timeout', { simple: true })).toBe(1234);
    expect(store.kind).toBe('sqlite');
    expect(store.supports).toEqual({ listenNotify: false, skipLocked: false, shared: true });
    await store.close();
  });

  it.each([
    ['under a regular file', (root: string) => join(root, 'plain-file', 'tasks.db')],
    ['a directory', (root: string) => root],
    ['not a database', (root: string) => join(root, 'plain-file')],
  ])('refuses a path that is %s with STORE_UNAVAILABLE naming it', async (_label, pathOf) => {
    await writeFile(join(dir, 'plain-file'), 'x'.repeat(4096));
    const path = pathOf(dir);
    const error: unknown = await SqliteStore.open(path).catch((e: unknown) => e);
    expect(isTasklatchError(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toContain(path);
  });
});
