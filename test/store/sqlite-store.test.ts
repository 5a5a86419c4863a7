import { readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { readMigrationFiles } from '../../src/store/migrations.js';
import { openSqlite } from '../../src/store/sqlite/connection.js';
import { migrateSqlite } from '../../src/store/sqlite/migrate.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { taskSql } from '../../src/store/sqlite/task-statements.js';
import type { ClaimReport } from '../support/sqlite-claim-child.js';
import { makeRacePlan, raceSeedRecord, SEED_VERSION, type RaceReport } from '../support/sqlite-race-plan.js';
import { distBuilt, runChildren, writeChildScript, DIST_STORE_URL } from '../support/sqlite-race-run.js';

/** The first column of each row. */
function column(rows: unknown[]): unknown[] {
  return rows.map((row) => firstOf(row));
}

/** The first column of one row. */
function firstOf(row: unknown): unknown {
  return Object.values(row as Record<string, unknown>)[0];
}

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
    ['app', 'TEXT', 1, 0],
    ['tool_digest', 'TEXT', 0, 0],
    ['tool_version', 'TEXT', 0, 0],
    ['parked_at_ms', 'INTEGER', 0, 0],
    ['parks', 'INTEGER', 1, 0],
    ['parent_task_id', 'TEXT', 0, 0],
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
  // A rowid table (rows in the order they began); its key is the unique index task_read_audit_key.
  task_read_audit: [
    ['task_key', 'TEXT', 1, 0],
    ['auth_key', 'TEXT', 1, 0],
    ['surface', 'TEXT', 1, 0],
    ['decision', 'TEXT', 1, 0],
    ['window_start_ms', 'INTEGER', 1, 0],
    ['count', 'INTEGER', 1, 0],
    ['first_at_ms', 'INTEGER', 1, 0],
    ['last_at_ms', 'INTEGER', 1, 0],
    ['task_id', 'TEXT', 0, 0],
    ['correlation_id', 'TEXT', 1, 0],
    ['status', 'TEXT', 0, 0],
    ['version', 'INTEGER', 0, 0],
    ['detail', 'TEXT', 0, 0],
  ],
  task_inputs: [
    ['task_id', 'TEXT', 1, 1],
    ['input_key', 'TEXT', 1, 2],
    ['ask_seq', 'INTEGER', 1, 0],
    ['input_ordinal', 'INTEGER', 1, 0],
    ['request', 'TEXT', 1, 0],
    ['request_digest', 'TEXT', 1, 0],
    ['asked_at_ms', 'INTEGER', 1, 0],
    ['response', 'TEXT', 0, 0],
    ['response_digest', 'TEXT', 0, 0],
    ['answered_at_ms', 'INTEGER', 0, 0],
    ['deadline_ms', 'INTEGER', 0, 0],
    ['position', 'INTEGER', 0, 0],
  ],
  task_events: [
    ['task_id', 'TEXT', 1, 1],
    ['seq', 'INTEGER', 1, 2],
    ['type', 'TEXT', 1, 0],
    ['payload', 'TEXT', 1, 0],
    ['key', 'TEXT', 0, 0],
    ['sent_at_ms', 'INTEGER', 1, 0],
    ['consumed_at_ms', 'INTEGER', 0, 0],
    ['position', 'INTEGER', 0, 0],
  ],
  task_progress: [
    ['id', 'INTEGER', 0, 1],
    ['payload', 'TEXT', 1, 0],
  ],
  task_steps: [
    ['task_id', 'TEXT', 1, 1],
    ['position', 'INTEGER', 1, 2],
    ['name', 'TEXT', 1, 0],
    ['kind', 'TEXT', 1, 0],
    ['status', 'TEXT', 1, 0],
    ['attempts', 'INTEGER', 1, 0],
    ['value', 'TEXT', 0, 0],
    ['error', 'TEXT', 0, 0],
    ['value_bytes', 'INTEGER', 1, 0],
    ['wake_at_ms', 'INTEGER', 0, 0],
    ['concurrent', 'INTEGER', 1, 0],
    ['started_at_ms', 'INTEGER', 1, 0],
    ['updated_at_ms', 'INTEGER', 1, 0],
  ],
  worker_versions: [
    ['app', 'TEXT', 1, 1],
    ['tool_name', 'TEXT', 1, 2],
    ['version', 'TEXT', 1, 3],
    ['worker_id', 'TEXT', 1, 4],
    ['first_seen_ms', 'INTEGER', 1, 0],
    ['last_seen_ms', 'INTEGER', 1, 0],
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
/** Every numbered migration the package ships: each is recorded once. */
const MIGRATION_FILES = readdirSync(new URL('../../migrations/sqlite/', import.meta.url)).filter((f) => f.endsWith('.sql')).length;

const EXPECTED_INDEXES = [
  ['task_audit_at_idx', 'task_audit', 'CREATE INDEX task_audit_at_idx ON task_audit (at_ms)'],
  ['task_audit_task_idx', 'task_audit', 'CREATE INDEX task_audit_task_idx ON task_audit (task_id, id)'],
  ['task_events_pending_idx', 'task_events', 'CREATE INDEX task_events_pending_idx ON task_events (task_id, type, seq) WHERE consumed_at_ms IS NULL'],
  [
    'task_inputs_deadline_idx',
    'task_inputs',
    'CREATE INDEX task_inputs_deadline_idx ON task_inputs (deadline_ms) WHERE answered_at_ms IS NULL AND deadline_ms IS NOT NULL',
  ],
  ['task_outbox_available_idx', 'task_outbox', 'CREATE INDEX task_outbox_available_idx ON task_outbox (available_at_ms) WHERE done_at_ms IS NULL'],
  ['task_outbox_task_idx', 'task_outbox', 'CREATE INDEX task_outbox_task_idx ON task_outbox (task_id)'],
  [
    'task_read_audit_key',
    'task_read_audit',
    'CREATE UNIQUE INDEX task_read_audit_key ON task_read_audit (task_key, auth_key, surface, decision, window_start_ms)',
  ],
  ['task_read_audit_window_idx', 'task_read_audit', 'CREATE INDEX task_read_audit_window_idx ON task_read_audit (window_start_ms)'],
  ['task_steps_name_key', 'task_steps', "CREATE UNIQUE INDEX task_steps_name_key ON task_steps (task_id, kind = 'patch', name)"],
  ['task_steps_waiting_idx', 'task_steps', "CREATE INDEX task_steps_waiting_idx ON task_steps (wake_at_ms) WHERE status IN ('sleeping', 'retrying')"],
  ['tasks_auth_created_idx', 'tasks', 'CREATE INDEX tasks_auth_created_idx ON tasks (auth_key, created_at_ms, task_id)'],
  [
    'tasks_concurrency',
    'tasks',
    'CREATE INDEX tasks_concurrency ON tasks (app, tool_name, concurrency_key, lease_expires_at_ms) WHERE concurrency_key IS NOT NULL',
  ],
  ['tasks_created_idx', 'tasks', 'CREATE INDEX tasks_created_idx ON tasks (created_at_ms, task_id)'],
  ['tasks_expires_idx', 'tasks', 'CREATE INDEX tasks_expires_idx ON tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL'],
  [
    'tasks_finished_idx',
    'tasks',
    "CREATE INDEX tasks_finished_idx ON tasks (last_updated_at_ms) WHERE expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled')",
  ],
  ['tasks_held_by_auth', 'tasks', 'CREATE INDEX tasks_held_by_auth ON tasks (auth_key, expires_at_ms, status)'],
  ['tasks_parent', 'tasks', 'CREATE INDEX tasks_parent ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL'],
  ['tasks_parked', 'tasks', 'CREATE INDEX tasks_parked ON tasks (parked_at_ms) WHERE parked_at_ms IS NOT NULL'],
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
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string }>
    ).map((r) => r.name);
    expect(tables).toEqual(Object.keys(EXPECTED_COLUMNS).sort());
    for (const [table, columns] of Object.entries(EXPECTED_COLUMNS)) {
      const info = db.pragma(`table_info(${table})`) as { name: string; type: string; notnull: number; pk: number }[];
      expect(
        info.map((c) => [c.name, c.type, c.notnull, c.pk]),
        table,
      ).toEqual(columns);
    }
    const indexes = db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").all() as Array<
      Record<string, string>
    >;
    expect(indexes.map((row) => Object.values(row).map((v) => v.replace(/\s+/g, ' ')))).toEqual(EXPECTED_INDEXES);
    const unique = (db.pragma('index_list(tasks)') as { name: string; unique: number; origin: string }[]).filter((i) => i.origin === 'u');
    expect(unique).toHaveLength(1);
    expect((db.pragma(`index_info(${unique[0]!.name})`) as { name: string }[]).map((c) => c.name)).toEqual(['auth_key', 'idempotency_key']);
    for (const child of ['task_outbox', 'task_inputs', 'task_steps', 'task_events']) {
      const fks = db.pragma(`foreign_key_list(${child})`) as { table: string; from: string; to: string; on_delete: string }[];
      expect(
        fks.map((f) => [f.table, f.from, f.to, f.on_delete]),
        child,
      ).toEqual([['tasks', 'task_id', 'task_id', 'CASCADE']]);
    }
    // The primary key (task_id, input_key) is the autoindex that keeps a key unique for the task's lifetime.
    const inputKeys = (db.pragma('index_list(task_inputs)') as { name: string; origin: string }[]).filter((i) => i.origin === 'pk');
    expect(inputKeys.map((i) => (db.pragma(`index_info(${i.name})`) as { name: string }[]).map((c) => c.name))).toEqual([['task_id', 'input_key']]);
    // A journal's position is unique within a task, and a name within its namespace (a patch marker's apart: the expression, null in index_info).
    const stepKeys = (db.pragma('index_list(task_steps)') as { name: string; origin: string; unique: number }[]).filter((i) => i.unique === 1);
    expect(stepKeys.map((i) => [i.origin, (db.pragma(`index_info(${i.name})`) as { name: string | null }[]).map((c) => c.name)]).sort()).toEqual([
      ['c', ['task_id', null, 'name']],
      ['pk', ['task_id', 'position']],
    ]);
    const all = [
      '001_init.sql',
      '002_dispatch.sql',
      '003_active_tasks.sql',
      '004_task_inputs.sql',
      '005_task_app.sql',
      '006_read_audit.sql',
      '007_task_progress.sql',
      '008_task_steps.sql',
      '009_read_audit_window.sql',
      '010_held_tasks_index.sql',
      '011_read_audit_by_arrival.sql',
      '012_tool_versions.sql',
      '013_step_markers.sql',
      '014_parked_tasks.sql',
      '015_task_events.sql',
      '016_task_parents.sql',
      '017_concurrency_keys.sql',
      '019_console.sql',
    ];
    expect(column(db.prepare('SELECT name FROM tasklatch_migrations ORDER BY name').all())).toEqual(all);
    expect(store.migrationsApplied).toEqual(all);
    await store.close();
  });

  it("counts an admission's bounds from one covering index: no table row is read for the caller's stored tasks", async () => {
    const store = await SqliteStore.open(join(dir, 'plan.db'));
    try {
      // Plans are made without the values: any will do for the parameters.
      const plan = (sql: string) => {
        const statement = store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
        const positional = sql.split('?').length - 1;
        const rows = positional > 0 ? statement.all(...Array.from({ length: positional }, () => null)) : statement.all({ auth_key: 'a', now: 0 });
        return (rows as { detail: string }[]).map((row) => row.detail);
      };
      expect(plan(taskSql.insertTaskBounded).filter((d) => d.includes('tasks USING'))).toEqual([
        'SEARCH tasks USING COVERING INDEX tasks_held_by_auth (auth_key=?)',
      ]);
      for (const count of [taskSql.countActive, taskSql.countStored])
        expect(plan(count)).toEqual(['SEARCH tasks USING COVERING INDEX tasks_held_by_auth (auth_key=?)']);
    } finally {
      await store.close();
    }
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
    expect(firstOf(second.db.prepare('SELECT count(*) FROM tasklatch_migrations').get())).toBe(MIGRATION_FILES);
    await second.close();
  });

  it('refuses a file whose recorded migration changed or is unknown (SCHEMA_MISMATCH)', async () => {
    const path = join(dir, 'mismatch.db');
    const first = await SqliteStore.open(path);
    first.db.prepare("UPDATE tasklatch_migrations SET checksum = 'edited' WHERE name = '002_dispatch.sql'").run();
    const changed: unknown = await SqliteStore.open(path).catch((e: unknown) => e);
    expect(isTasklatchError(changed, 'SCHEMA_MISMATCH')).toBe(true);
    expect((changed as Error).message).toContain('002_dispatch.sql');
    first.db.prepare("DELETE FROM tasklatch_migrations WHERE name = '002_dispatch.sql'").run();
    first.db.prepare("INSERT INTO tasklatch_migrations (name, checksum, applied_at_ms) VALUES ('999_future.sql', 'x', 0)").run();
    const unknown: unknown = await SqliteStore.open(path).catch((e: unknown) => e);
    expect(isTasklatchError(unknown, 'SCHEMA_MISMATCH')).toBe(true);
    expect((unknown as Error).message).toContain('999_future.sql');
    await first.close();
  });

  it("migrates a file from before apps: its tasks become the default app's, claimable as before", async () => {
    const path = join(dir, 'before-apps.db');
    const db = openSqlite(path);
    // The schema as 004 left it, with a task admitted then and its open outbox entry.
    db.exec('CREATE TABLE tasklatch_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)');
    for (const file of (await readMigrationFiles(new URL('../../migrations/sqlite/', import.meta.url))).filter((f) => f.name < '005')) {
      db.exec(file.sql);
      db.prepare('INSERT INTO tasklatch_migrations (name, checksum, applied_at_ms) VALUES (?, ?, 0)').run(file.name, file.checksum);
    }
    const now = Date.now();
    db.prepare(
      `INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms) VALUES ('old-task', 'tenant-a/alice', 'build_report', 'working', 1, ?, ?)`,
    ).run(now, now);
    db.prepare(`INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms) VALUES ('old-task', ?, ?)`).run(now, now);
    db.close();

    const store = await SqliteStore.open(path);
    try {
      expect(store.migrationsApplied).toEqual([
        '005_task_app.sql',
        '006_read_audit.sql',
        '007_task_progress.sql',
        '008_task_steps.sql',
        '009_read_audit_window.sql',
        '010_held_tasks_index.sql',
        '011_read_audit_by_arrival.sql',
        '012_tool_versions.sql',
        '013_step_markers.sql',
        '014_parked_tasks.sql',
        '015_task_events.sql',
        '016_task_parents.sql',
        '017_concurrency_keys.sql',
        '019_console.sql',
      ]);
      expect((await store.get({ authKey: 'tenant-a/alice', taskId: 'old-task', now: now + 1 })).record).toMatchObject({ app: 'default', toolDigest: null });
      const claim = { now: now + 1, leaseMs: 1000, limit: 5, maxAttempts: 3, abandonedResult: null, correlationId: 'c', tools: ['build_report'] };
      expect(await store.claim({ ...claim, owner: 'w-other', app: 'billing' })).toEqual([]);
      expect((await store.claim({ ...claim, owner: 'w-default', app: 'default' })).map((r) => [r.taskId, r.app])).toEqual([['old-task', 'default']]);
    } finally {
      await store.close();
    }
  });

  it("migrates a file's read audit to rows stored in the order they began: every row kept, and upserts still add to their row", async () => {
    const path = join(dir, 'before-arrival.db');
    const db = openSqlite(path);
    // The schema as 010 left it (the read audit keyed by task), with two rows of two tasks.
    db.exec('CREATE TABLE tasklatch_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)');
    for (const file of (await readMigrationFiles(new URL('../../migrations/sqlite/', import.meta.url))).filter((f) => f.name < '011')) {
      db.exec(file.sql);
      db.prepare('INSERT INTO tasklatch_migrations (name, checksum, applied_at_ms) VALUES (?, ?, 0)').run(file.name, file.checksum);
    }
    const insert = db.prepare(
      `INSERT INTO task_read_audit (task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, task_id, correlation_id, status, version, detail)
       VALUES (?, 'tenant-a/alice', 'read', 'RETURN_STATUS', 0, ?, ?, ?, ?, 'c', 'working', 1, NULL)`,
    );
    // Keyed order (b before z) differs from the order they began (z first).
    insert.run('z-task', 3, 10, 30, 'z-task');
    insert.run('b-task', 2, 20, 40, 'b-task');
    db.close();

    const store = await SqliteStore.open(path);
    try {
      expect(store.migrationsApplied).toEqual([
        '011_read_audit_by_arrival.sql',
        '012_tool_versions.sql',
        '013_step_markers.sql',
        '014_parked_tasks.sql',
        '015_task_events.sql',
        '016_task_parents.sql',
        '017_concurrency_keys.sql',
        '019_console.sql',
      ]);
      const rows = () => store.db.prepare('SELECT task_key, count, first_at_ms, last_at_ms FROM task_read_audit ORDER BY rowid').all();
      expect(rows()).toEqual([
        { task_key: 'z-task', count: 3, first_at_ms: 10, last_at_ms: 30 },
        { task_key: 'b-task', count: 2, first_at_ms: 20, last_at_ms: 40 },
      ]);
      // The key is still the upsert's conflict target: a read of b-task adds to its row.
      await store.recordDecision({
        at: 50,
        surface: 'read',
        decision: 'RETURN_STATUS',
        authKey: 'tenant-a/alice',
        taskId: 'b-task',
        correlationId: 'c2',
        status: 'working',
        version: 1,
      });
      // Reading a trail first stores what the audit writer holds.
      expect((await store.auditTrail({ taskId: 'b-task' })).map((e) => e.count)).toEqual([3]);
      expect(rows()).toEqual([
        { task_key: 'z-task', count: 3, first_at_ms: 10, last_at_ms: 30 },
        { task_key: 'b-task', count: 3, first_at_ms: 20, last_at_ms: 50 },
      ]);
      expect(() => store.db.prepare("INSERT INTO task_read_audit SELECT * FROM task_read_audit WHERE task_key = 'z-task'").run()).toThrow(/UNIQUE/);
    } finally {
      await store.close();
    }
  });

  it('rebuilds a journal from before patch markers: every row kept (not concurrent), its key, index and cascade as before, woke and patch rows accepted', async () => {
    const path = join(dir, 'before-markers.db');
    const db = openSqlite(path);
    db.exec('CREATE TABLE tasklatch_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)');
    for (const file of (await readMigrationFiles(new URL('../../migrations/sqlite/', import.meta.url))).filter((f) => f.name < '013')) {
      db.exec(file.sql);
      db.prepare('INSERT INTO tasklatch_migrations (name, checksum, applied_at_ms) VALUES (?, ?, 0)').run(file.name, file.checksum);
    }
    db.prepare(`INSERT INTO tasks (task_id, auth_key, status, version, created_at_ms, last_updated_at_ms) VALUES ('t', 'a', 'working', 1, 0, 0)`).run();
    const step = db.prepare(
      `INSERT INTO task_steps (task_id, position, name, kind, status, attempts, value, value_bytes, wake_at_ms, started_at_ms, updated_at_ms)
       VALUES ('t', ?, ?, ?, ?, ?, ?, ?, ?, 1, 2)`,
    );
    step.run(0, 'a', 'do', 'completed', 1, '"x"', 3, null);
    step.run(1, 'nap', 'sleep', 'sleeping', 0, null, 0, 50);
    db.close();

    const store = await SqliteStore.open(path);
    try {
      expect(store.migrationsApplied).toContain('013_step_markers.sql');
      expect((await store.taskSteps({ taskId: 't' })).map((s) => [s.position, s.name, s.kind, s.status, s.value, s.wakeAt, s.concurrent])).toEqual([
        [0, 'a', 'do', 'completed', 'x', null, false],
        [1, 'nap', 'sleep', 'sleeping', undefined, 50, false],
      ]);
      const insert = store.db.prepare(
        `INSERT INTO task_steps (task_id, position, name, kind, status, attempts, started_at_ms, updated_at_ms) VALUES ('t', ?, ?, ?, ?, 0, 1, 2)`,
      );
      insert.run(2, 'a', 'patch', 'completed');
      expect(() => insert.run(3, 'a', 'do', 'completed')).toThrow(/UNIQUE/);
      expect(() => insert.run(3, 'b', 'wait', 'completed')).toThrow(/CHECK/);
      store.db.prepare(`UPDATE task_steps SET status = 'woke' WHERE name = 'nap'`).run();
      // The plan of the due waits still uses the waiting index, and the cascade still takes a task's steps with it.
      const plan = store.db.prepare(`EXPLAIN QUERY PLAN SELECT task_id FROM task_steps WHERE status IN ('sleeping', 'retrying') AND wake_at_ms > 0`).all();
      expect(JSON.stringify(plan)).toContain('task_steps_waiting_idx');
      store.db.prepare(`DELETE FROM tasks WHERE task_id = 't'`).run();
      expect(store.db.prepare('SELECT count(*) AS n FROM task_steps').get()).toEqual({ n: 0 });
    } finally {
      await store.close();
    }
  });

  it('opens in WAL mode with foreign keys on and the busy timeout set', async () => {
    const store = await SqliteStore.open(join(dir, 'nested', 'dirs', 'wal.db'), { busyTimeoutMs: 1234 });
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(store.db.pragma('busy_timeout', { simple: true })).toBe(1234);
    expect(store.kind).toBe('sqlite');
    expect(store.supports).toEqual({ listenNotify: true, shared: true });
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

const APPLIED = new Set(['APPLY_TRANSITION', 'CANCEL_TASK']);
const CLASSIFIED = new Set(['BLOCK_TERMINAL_REWRITE', 'IDEMPOTENT_TERMINAL', 'BLOCK_STALE_VERSION', 'ALREADY_TERMINAL']);

describe.skipIf(!distBuilt())('SQLite across OS processes (built store)', () => {
  if (!distBuilt()) console.warn(`skipped: ${DIST_STORE_URL.pathname} is missing; run \`npm run build\` (npm test does)`);

  it('four processes opening one fresh file at once migrate it exactly once', async () => {
    const script = await writeChildScript(dir);
    const path = join(dir, 'fresh-shared.db');
    const replies = await runChildren(
      script,
      [0, 1, 2, 3].map(() => ['open', DIST_STORE_URL.href, path]),
      'opened',
    );
    expect(
      replies.map((r) => r.ok),
      JSON.stringify(replies),
    ).toEqual([true, true, true, true]);
    const store = await SqliteStore.open(path);
    expect(firstOf(store.db.prepare('SELECT count(*) FROM tasklatch_migrations').get())).toBe(MIGRATION_FILES);
    expect(firstOf(store.db.prepare('SELECT count(*) FROM tasklatch_meta').get())).toBe(1);
    await store.close();
  });

  it('terminal writers racing from two processes: exactly one applies per task', async () => {
    const trials = Number(process.env.TASKLATCH_RACE_TRIALS ?? 1000);
    const slotMs = Number(process.env.TASKLATCH_RACE_SLOT_MS ?? 8);
    const procs = 2;
    const plan = makeRacePlan(trials, procs, 20260723);
    const path = join(dir, 'race.db');
    const store = await SqliteStore.open(path);
    await store.seed(plan.trials.map((t) => raceSeedRecord(plan, t)));
    const planPath = join(dir, 'plan.json');
    await writeFile(planPath, JSON.stringify(plan));
    const script = await writeChildScript(dir);

    const started = performance.now();
    const argLists = Array.from({ length: procs }, (_, p) => ['race', DIST_STORE_URL.href, path, planPath, String(p)]);
    const reports = (await runChildren(script, argLists, 'report', slotMs)).map((m) => m.report as RaceReport);
    const elapsedMs = Math.round(performance.now() - started);

    const counts: Record<string, number> = {};
    const decisionOf = plan.trials.map((t) => new Array<string | undefined>(t.writers.length));
    for (const report of reports) {
      for (const [t, w, decision] of report.outcomes) {
        decisionOf[t]![w] = decision;
        counts[decision] = (counts[decision] ?? 0) + 1;
      }
    }
    let overlapping = 0;
    const wins = new Array<number>(procs).fill(0);
    for (const [t, trial] of plan.trials.entries()) {
      const decisions = decisionOf[t]!;
      expect(
        decisions.every((d) => d !== undefined),
        `trial ${t}: every writer answered`,
      ).toBe(true);
      const applied = decisions.flatMap((d, w) => (APPLIED.has(d!) ? [w] : []));
      expect(applied, `trial ${t}: applied writers`).toHaveLength(1);
      const winner = trial.writers[applied[0]!]!;
      wins[winner.proc]!++;
      const finalStatus = winner.kind === 'cancel' ? 'cancelled' : winner.status;
      for (const [w, writer] of trial.writers.entries()) {
        if (w === applied[0]) continue;
        const decision = decisions[w]!;
        expect(CLASSIFIED.has(decision), `trial ${t} writer ${w}: ${decision}`).toBe(true);
        if (decision === 'BLOCK_STALE_VERSION') expect(writer.expectedVersion).not.toBe(SEED_VERSION);
        if (decision === 'IDEMPOTENT_TERMINAL') expect(writer.status).toBe(finalStatus);
        expect(decision === 'ALREADY_TERMINAL').toBe(writer.kind === 'cancel');
      }
      const [a, b] = [reports[0]!.windows[t]!, reports[1]!.windows[t]!];
      if (a[0] < b[1] && b[0] < a[1]) overlapping++;
    }

    // The stored facts: one terminal status per row, version 2, and one applied line per trail.
    const rows = store.db.prepare('SELECT task_id, status, version FROM tasks').all() as { task_id: string; status: string; version: number }[];
    expect(rows).toHaveLength(trials);
    expect(rows.every((r) => ['completed', 'failed', 'cancelled'].includes(r.status) && r.version === SEED_VERSION + 1)).toBe(true);
    for (const trial of plan.trials) {
      const trail = await store.auditTrail({ taskId: trial.taskId });
      expect(trail).toHaveLength(trial.writers.length);
      expect(
        trail.filter((e) => APPLIED.has(e.decision)),
        trial.taskId,
      ).toHaveLength(1);
    }
    await store.close();

    const writers = plan.trials.reduce((n, t) => n + t.writers.length, 0);
    console.log(
      JSON.stringify(
        {
          sqliteRace: {
            processes: procs,
            trials,
            writers,
            outcomes: counts,
            winsPerProcess: wins,
            trialsOverlappingInTime: overlapping,
            busyRetries: reports.reduce((n, r) => n + r.busyRetries, 0),
            childElapsedMs: reports.map((r) => Math.round(r.elapsedMs)),
            elapsedMs,
          },
        },
        null,
        1,
      ),
    );
  });

  it('claimers in four processes on one file: every task claimed exactly once', async () => {
    const tasks = Number(process.env.TASKLATCH_CLAIM_TASKS ?? 200);
    const procs = 4;
    const limit = 5;
    const pauseMs = 2;
    const now = Date.parse('2026-07-23T12:00:00.000Z');
    const path = join(dir, 'claim.db');
    const store = await SqliteStore.open(path);
    const ids: string[] = [];
    for (let i = 0; i < tasks; i++) {
      const taskId = `claim-${String(i).padStart(4, '0')}`;
      const request = { method: 'tools/call', params: { name: 'export_ledger', arguments: { i } } };
      await store.admit({
        taskId,
        authKey: 'claim/tenant',
        toolName: 'export_ledger',
        request,
        requestDigest: `d${i}`,
        idempotencyKey: null,
        ttl: null,
        pollInterval: null,
        correlationId: `c${i}`,
        now: now + i,
      });
      ids.push(taskId);
    }
    const script = await writeClaimChild(dir);
    const started = performance.now();
    const argLists = Array.from({ length: procs }, (_, p) => [DIST_STORE_URL.href, path, `worker-${p}`, String(now + tasks), String(limit), String(pauseMs)]);
    const reports = (await runChildren(script, argLists, 'report')).map((m) => m.report as ClaimReport);
    const elapsedMs = Math.round(performance.now() - started);

    // Across processes: each task once, at version 2 and attempt 1, leased to the one who got it.
    const claimedBy = new Map<string, string>();
    for (const report of reports) {
      for (const [taskId, version, attempt, leaseOwner] of report.claimed) {
        expect(claimedBy.has(taskId), `${taskId} claimed by ${claimedBy.get(taskId)} and ${report.owner}`).toBe(false);
        claimedBy.set(taskId, report.owner);
        expect([version, attempt, leaseOwner]).toEqual([2, 1, report.owner]);
      }
    }
    expect([...claimedBy.keys()].sort()).toEqual(ids);
    // A claim that no other process can see through would be a test of nothing.
    expect(reports.filter((r) => r.claimed.length > 0).length).toBeGreaterThanOrEqual(2);

    // The stored facts agree with what the processes were told.
    const rows = store.db
      .prepare(
        'SELECT t.task_id, t.lease_owner, t.version, t.attempt, o.claimed_by, o.attempt AS outbox_attempt FROM tasks t JOIN task_outbox o USING (task_id)',
      )
      .all() as { task_id: string; lease_owner: string; version: number; attempt: number; claimed_by: string; outbox_attempt: number }[];
    expect(rows).toHaveLength(tasks);
    for (const row of rows) {
      expect(row, row.task_id).toEqual({
        ...row,
        lease_owner: claimedBy.get(row.task_id),
        version: 2,
        attempt: 1,
        claimed_by: claimedBy.get(row.task_id),
        outbox_attempt: 1,
      });
    }
    const claimLines = firstOf(store.db.prepare("SELECT count(*) FROM task_audit WHERE detail LIKE 'claim %'").get());
    expect(claimLines).toBe(tasks);
    expect(await store.pendingDispatch()).toBe(tasks); // claimed, not finished: still open
    await store.close();

    console.log(
      JSON.stringify({
        sqliteClaim: {
          tasks,
          processes: procs,
          limitPerCall: limit,
          pauseBetweenCallsMs: pauseMs,
          claimsPerProcess: reports.map((r) => r.claimed.length),
          callsPerProcess: reports.map((r) => r.calls),
          busyRetries: reports.reduce((n, r) => n + r.busyRetries, 0),
          childElapsedMs: reports.map((r) => Math.round(r.elapsedMs)),
          elapsedMs,
        },
      }),
    );
  });
});

/**
 * Writes the claim child as `.mjs` into `dir`, transpiled the way sqlite-race-run.ts writes the
 * race child (whose helper is bound to that one source file).
 */
async function writeClaimChild(into: string): Promise<string> {
  const source = await readFile(new URL('../support/sqlite-claim-child.ts', import.meta.url), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  });
  const path = join(into, 'sqlite-claim-child.mjs');
  await writeFile(path, outputText);
  return path;
}
