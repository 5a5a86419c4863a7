import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { migratePostgres, readPostgresMigrations } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl, schemaOf } from '../support/postgres.js';
import { pgAdmission as admission, PG_NOW as NOW } from '../support/records.js';

// PostgreSQL-only behaviour: the schema a fresh database gets, migrations under concurrency,
// ?schema= isolation and connection failures. The behaviour shared with the other stores, the
// admission and terminal-writer races among it, is in suite/*.test.ts.

/** Every table, column, type and nullability tasklatch's migrations create. */
const EXPECTED_COLUMNS = `
task_audit: id bigint NO, at_ms bigint YES, surface text YES, decision text YES, auth_key text YES, task_id text YES,
  correlation_id text YES, status text YES, version integer YES, detail text YES
task_caller_counts: auth_key text NO, stored bigint NO
task_events: task_id text NO, seq integer NO, type text NO, payload text NO, key text YES, sent_at_ms bigint NO,
  consumed_at_ms bigint YES, position integer YES
task_inputs: task_id text NO, input_key text NO, ask_seq integer NO, input_ordinal integer NO, request jsonb NO,
  request_digest text NO, asked_at_ms bigint NO, response jsonb YES, response_digest text YES, answered_at_ms bigint YES,
  deadline_ms bigint YES, position integer YES
task_outbox: id bigint NO, task_id text NO, created_at_ms bigint NO, available_at_ms bigint NO, claimed_by text YES,
  lease_expires_at_ms bigint YES, attempt integer NO, done_at_ms bigint YES, app text NO
task_read_audit: task_key text NO, auth_key text NO, surface text NO, decision text NO, window_start_ms bigint NO,
  count bigint NO, first_at_ms bigint NO, last_at_ms bigint NO, task_id text YES, correlation_id text NO, status text YES,
  version integer YES, detail text YES
task_steps: task_id text NO, position integer NO, name text NO, kind text NO, status text NO, attempts integer NO,
  value text YES, error text YES, value_bytes integer NO, wake_at_ms bigint YES, started_at_ms bigint NO, updated_at_ms bigint NO,
  concurrent boolean NO
tasklatch_meta: key text NO, value text NO
tasklatch_migrations: name text NO, applied_at_ms bigint NO, checksum text YES
tasks: task_id text NO, auth_key text NO, tool_name text YES, status text NO, status_message text YES, version integer NO,
  created_at_ms bigint NO, last_updated_at_ms bigint NO, ttl_ms bigint YES, expires_at_ms bigint YES,
  poll_interval_ms integer YES, request_digest text YES, idempotency_key text YES, request jsonb YES,
  cancel_requested boolean NO, result jsonb YES, result_digest text YES, correlation_id text YES, attempt integer NO,
  lease_owner text YES, lease_expires_at_ms bigint YES, app text NO, tool_digest text YES, tool_version text YES,
  parked_at_ms bigint YES, parks integer NO, parent_task_id text YES, concurrency_key text YES, concurrency_limit integer YES
worker_versions: app text NO, tool_name text NO, version text NO, worker_id text NO, first_seen_ms bigint NO,
  last_seen_ms bigint NO`;

const EXPECTED_INDEXES = [
  'tasks USING btree (parent_task_id) WHERE (parent_task_id IS NOT NULL)',
  'tasks USING btree (parked_at_ms) WHERE (parked_at_ms IS NOT NULL)',
  'tasks USING btree (app, tool_name, concurrency_key, lease_expires_at_ms) WHERE (concurrency_key IS NOT NULL)',
  'task_audit USING btree (task_id, id)',
  'task_audit USING btree (id)',
  'task_audit USING btree (at_ms)',
  'task_caller_counts USING btree (auth_key)',
  'task_read_audit USING btree (window_start_ms)',
  'task_read_audit USING btree (task_key, auth_key, surface, decision, window_start_ms)',
  "tasks USING btree (last_updated_at_ms) WHERE ((expires_at_ms IS NULL) AND (status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text])))",
  'task_inputs USING btree (deadline_ms) WHERE ((answered_at_ms IS NULL) AND (deadline_ms IS NOT NULL))',
  'task_inputs USING btree (task_id, input_key)',
  'task_outbox USING btree (app, available_at_ms, id) WHERE (done_at_ms IS NULL)',
  'task_steps USING btree (task_id, "position")',
  'task_events USING btree (task_id, seq)',
  'task_events USING btree (task_id, type, seq) WHERE (consumed_at_ms IS NULL)',
  "task_steps USING btree (task_id, ((kind = 'patch'::text)), name)",
  "task_steps USING btree (wake_at_ms) WHERE (status = ANY (ARRAY['sleeping'::text, 'retrying'::text]))",
  'task_outbox USING btree (id)',
  'task_outbox USING btree (task_id, done_at_ms)',
  'tasklatch_meta USING btree (key)',
  'tasklatch_migrations USING btree (name)',
  "tasks USING btree (auth_key) WHERE (status = ANY (ARRAY['working'::text, 'input_required'::text]))",
  'tasks USING btree (auth_key, created_at_ms, task_id)',
  'tasks USING btree (created_at_ms, task_id)',
  'tasks USING btree (auth_key, idempotency_key)',
  'tasks USING btree (expires_at_ms) WHERE (expires_at_ms IS NOT NULL)',
  'tasks USING btree (task_id)',
  'worker_versions USING btree (app, tool_name, version, worker_id)',
];

describe('PostgresStore schema and migrations', () => {
  let url: string;
  let store: PostgresStore;

  beforeAll(async () => {
    url = await freshPostgresUrl('pg_schema');
    store = await PostgresStore.open(url);
  });
  afterAll(async () => store.close());

  it('migrating from zero gives exactly the expected tables, columns and indexes', async () => {
    const columns = await store.pool.query<{ table_name: string; line: string }>(
      `SELECT table_name, string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position) AS line
         FROM information_schema.columns WHERE table_schema = $1 GROUP BY table_name ORDER BY table_name`,
      [schemaOf(url)],
    );
    const actual = columns.rows.map((r) => `${r.table_name}: ${r.line}`).join('\n');
    expect(actual).toBe(EXPECTED_COLUMNS.trim().replace(/,\n\s+/g, ', '));

    const indexes = await store.pool.query<{ def: string }>(
      `SELECT regexp_replace(indexdef, '^CREATE (UNIQUE )?INDEX \\S+ ON \\S+\\.', '') AS def
         FROM pg_indexes WHERE schemaname = $1 ORDER BY 1`,
      [schemaOf(url)],
    );
    expect(indexes.rows.map((r) => r.def)).toEqual([...EXPECTED_INDEXES].sort());
  });

  it('orders task ids by code point (COLLATE "C") and refuses unknown statuses', async () => {
    const collation = await store.pool.query<{ t: string; c: string }>(
      `SELECT table_name AS t, collation_name AS c FROM information_schema.columns
        WHERE table_schema = $1 AND (column_name = 'task_id' AND table_name NOT IN ('task_audit', 'task_read_audit') OR column_name = 'task_key')
        ORDER BY table_name`,
      [schemaOf(url)],
    );
    expect(collation.rows).toEqual([
      { t: 'task_events', c: 'C' },
      { t: 'task_inputs', c: 'C' },
      { t: 'task_outbox', c: 'C' },
      { t: 'task_read_audit', c: 'C' },
      { t: 'task_steps', c: 'C' },
      { t: 'tasks', c: 'C' },
    ]);
    await expect(
      store.pool.query(`INSERT INTO tasks (task_id, auth_key, status, version, created_at_ms, last_updated_at_ms) VALUES ('x', 'a', 'paused', 1, 0, 0)`),
    ).rejects.toThrow(/check constraint/);
  });

  it('records the migration and a 32-byte shared secret', async () => {
    const applied = await store.pool.query<{ name: string }>('SELECT name FROM tasklatch_migrations ORDER BY name');
    expect(applied.rows.map((r) => r.name)).toEqual([
      '001_init.sql',
      '002_dispatch.sql',
      '003_active_tasks.sql',
      '004_migration_checksums.sql',
      '005_task_inputs.sql',
      '006_task_app.sql',
      '007_read_audit.sql',
      '008_task_steps.sql',
      '009_read_audit_window.sql',
      '010_outbox_open_by_task.sql',
      '011_tool_versions.sql',
      '012_step_markers.sql',
      '013_parked_tasks.sql',
      '014_task_events.sql',
      '015_task_parents.sql',
      '016_concurrency_keys.sql',
      '018_console.sql',
      '019_caller_counts.sql',
      '020_concurrency_columns.sql',
    ]);
    const secret = await store.sharedSecret();
    expect(secret.length).toBe(32);
    expect(await store.sharedSecret()).toEqual(secret);
  });

  it('is idempotent: a second run applies nothing and keeps the secret', async () => {
    const before = await store.sharedSecret();
    expect(await migratePostgres(url)).toEqual([]);
    expect(await migratePostgres(store.pool, schemaOf(url))).toEqual([]);
    const again = await PostgresStore.open(url);
    try {
      expect(await again.sharedSecret()).toEqual(before);
    } finally {
      await again.close();
    }
  });

  it("records each file's checksum, fills in those recorded before 004, and refuses a changed or unknown file", async () => {
    const files = await readPostgresMigrations();
    const ledger = async () =>
      (await store.pool.query<{ name: string; checksum: string | null }>('SELECT name, checksum FROM tasklatch_migrations ORDER BY name')).rows;
    expect(await ledger()).toEqual(files.map((f) => ({ name: f.name, checksum: f.checksum })));
    // A ledger as 003 left it: no checksums. The next run fills them in from the known texts.
    await store.pool.query('UPDATE tasklatch_migrations SET checksum = NULL');
    expect(await migratePostgres(url)).toEqual([]);
    expect(await ledger()).toEqual(files.map((f) => ({ name: f.name, checksum: f.checksum })));
    await store.pool.query(`UPDATE tasklatch_migrations SET checksum = 'edited' WHERE name = '002_dispatch.sql'`);
    const changed: unknown = await migratePostgres(url).catch((e: unknown) => e);
    expect(isTasklatchError(changed, 'SCHEMA_MISMATCH')).toBe(true);
    expect((changed as Error).message).toContain('002_dispatch.sql');
    await store.pool.query(`UPDATE tasklatch_migrations SET checksum = $1 WHERE name = '002_dispatch.sql'`, [files[1]!.checksum]);
    await store.pool.query(`INSERT INTO tasklatch_migrations (name, applied_at_ms, checksum) VALUES ('999_future.sql', 0, 'x')`);
    const unknown: unknown = await migratePostgres(url).catch((e: unknown) => e);
    expect(isTasklatchError(unknown, 'SCHEMA_MISMATCH')).toBe(true);
    expect((unknown as Error).message).toContain('999_future.sql');
    await store.pool.query(`DELETE FROM tasklatch_migrations WHERE name = '999_future.sql'`);
    expect(await migratePostgres(url)).toEqual([]);
  });

  it('lets concurrent processes migrate one fresh schema: one applies, the rest find it done', async () => {
    const fresh = await freshPostgresUrl('pg_concurrent_migrate');
    const runs = await Promise.all(Array.from({ length: 6 }, () => migratePostgres(fresh)));
    expect(runs.filter((r) => r.length > 0)).toEqual([
      [
        '001_init.sql',
        '002_dispatch.sql',
        '003_active_tasks.sql',
        '004_migration_checksums.sql',
        '005_task_inputs.sql',
        '006_task_app.sql',
        '007_read_audit.sql',
        '008_task_steps.sql',
        '009_read_audit_window.sql',
        '010_outbox_open_by_task.sql',
        '011_tool_versions.sql',
        '012_step_markers.sql',
        '013_parked_tasks.sql',
        '014_task_events.sql',
        '015_task_parents.sql',
        '016_concurrency_keys.sql',
        '018_console.sql',
        '019_caller_counts.sql',
        '020_concurrency_columns.sql',
      ],
    ]);
    expect(runs.filter((r) => r.length === 0)).toHaveLength(5);
    const opened = await Promise.all([PostgresStore.open(fresh), PostgresStore.open(fresh)]);
    const secrets = await Promise.all(opened.map((s) => s.sharedSecret()));
    expect(secrets[0]).toEqual(secrets[1]);
    await Promise.all(opened.map((s) => s.close()));
  });
});

describe('PostgresStore connections', () => {
  it('keeps ?schema= stores apart', async () => {
    const [a, b] = await Promise.all([PostgresStore.open(await freshPostgresUrl('pg_iso_a')), PostgresStore.open(await freshPostgresUrl('pg_iso_b'))]);
    try {
      const admitted = await a.admit(admission({ taskId: 'shared-id' }));
      expect(admitted.decision).toBe('ACCEPT_TASK');
      expect((await b.get({ authKey: 'tenant-a/alice', taskId: 'shared-id', now: NOW })).decision).toBe('NOT_FOUND');
      expect((await b.list({ authKey: 'tenant-a/alice', now: NOW, after: null, limit: 10 })).records).toEqual([]);
      expect((await b.admit(admission({ taskId: 'shared-id' }))).decision).toBe('ACCEPT_TASK');
      expect(await a.sharedSecret()).not.toEqual(await b.sharedSecret());
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('sets the search_path on every connection and keeps startup options given in the URL', async () => {
    const url = new URL(await freshPostgresUrl('pg_options'));
    url.searchParams.set('options', '-c statement_timeout=4321');
    const store = await PostgresStore.open(url.toString(), { poolSize: 3 });
    try {
      const shown = await Promise.all(
        [1, 2, 3].map(() =>
          store.pool.query<{ path: string; timeout: string }>(`SELECT current_setting('search_path') AS path, current_setting('statement_timeout') AS timeout`),
        ),
      );
      expect(shown.map((r) => r.rows[0])).toEqual(Array(3).fill({ path: schemaOf(url.toString()), timeout: '4321ms' }));
    } finally {
      await store.close();
    }
  });

  it('reports an unreachable server as STORE_UNAVAILABLE naming host:port, never the password', async () => {
    const error: unknown = await PostgresStore.open('postgres://postgres:hunter2@127.0.0.1:1/test?schema=nowhere').catch((e: unknown) => e);
    expect(isTasklatchError(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toContain('127.0.0.1:1');
    expect((error as Error).message).not.toContain('hunter2');
  });

  it('refuses a schema name it cannot pass through search_path unchanged', async () => {
    const error: unknown = await PostgresStore.open('postgres://127.0.0.1:1/test?schema=Bad-Name').catch((e: unknown) => e);
    expect(isTasklatchError(error, 'INVALID_STORE_URL')).toBe(true);
    const reserved: unknown = await PostgresStore.open('postgres://127.0.0.1:1/test?schema=pg_mine').catch((e: unknown) => e);
    expect(isTasklatchError(reserved, 'INVALID_STORE_URL')).toBe(true);
    expect((reserved as Error).message).toMatch(/pg_ prefix is reserved/);
  });
});
