import { afterEach, describe, expect, it } from 'vitest';
import { childrenSql } from '../../src/store/postgres/children.js';
import { CLAIM_SETTINGS } from '../../src/store/postgres/dispatch.js';
import { readBatchSql } from '../../src/store/postgres/read-batcher.js';
import { sql } from '../../src/store/postgres/statements.js';
import { stepSql } from '../../src/store/postgres/steps.js';
import { appliedTransition } from '../../src/store/postgres/task-statements.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { pgAdmission } from '../support/records.js';

const open: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/**
 * The plan a connection keeps for a prepared statement is the generic plan it chose while the
 * tables were as they were then; on a fresh schema (empty tables, never analyzed) that is what a
 * store's connections keep while the tables grow, wherever autovacuum does not analyze them.
 * These read every task when they scan the table, so their generic plans on an empty schema
 * must find tasks by id. Without `types`, the server infers the parameters' types and every
 * argument is NULL: a generic plan does not depend on the values.
 */
async function genericPlan(store: PostgresStore, text: string, types = '', args = '', settings: readonly string[] = []): Promise<string> {
  const client = await store.pool.connect();
  try {
    await client.query('BEGIN');
    for (const setting of settings) await client.query(setting);
    await client.query("SET LOCAL plan_cache_mode = 'force_generic_plan'");
    await client.query(`PREPARE plan_probe ${types === '' ? '' : `(${types}) `}AS ${text}`);
    let values = args;
    if (types === '') {
      const { rows } = await client.query<{ n: number }>("SELECT cardinality(parameter_types) AS n FROM pg_prepared_statements WHERE name = 'plan_probe'");
      values = Array.from({ length: rows[0]?.n ?? 0 }, () => 'NULL').join(', ');
    }
    const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE plan_probe${values === '' ? '' : ` (${values})`}`);
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE ALL');
    client.release();
  }
}

describe('PostgreSQL plans kept from an empty schema', () => {
  it('the batched read looks each reader’s task up by its primary key', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('plan_reads'), { poolSize: 2 });
    open.push(store);
    const plan = await genericPlan(store, readBatchSql.selectVisibleMany, 'json', `'[["a","k",1],["b","k",1]]'`);
    expect(plan).toContain('Index Scan using tasks_pkey');
    expect(plan).not.toMatch(/Seq Scan on tasks|Hash Join/);
  });

  it('the claim walk, under its transaction’s settings, reads each entry’s task by its primary key', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('plan_claims'), { poolSize: 2 });
    open.push(store);
    for (const [text, types, args] of [
      [sql.dueOutboxOfApp, 'bigint, bigint, bigint, int, text[], text, text[], text[], text[]', `1, 0, 0, 8, NULL, 'default', NULL, '{}', '{}'`],
      [sql.dueOutbox, 'bigint, bigint, bigint, int, text[], text[], text[], text[]', `1, 0, 0, 8, NULL, NULL, '{}', '{}'`],
      [
        sql.dueOutboxOfApp,
        'bigint, bigint, bigint, int, text[], text, text[], text[], text[]',
        `1, 0, 0, 8, '{t}', 'default', '{"t\nv2"}', '{t}', '{"t\nv1","t\nv2"}'`,
      ],
    ] as const) {
      const plan = await genericPlan(store, text, types, args, CLAIM_SETTINGS);
      expect(plan).toContain('Index Scan using tasks_pkey');
      expect(plan).not.toMatch(/Seq Scan on tasks/);
    }
  });

  it('a terminal write and a cancellation close their task’s open outbox entry through its task id', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('plan_close'), { poolSize: 2 });
    open.push(store);
    const terminal = appliedTransition([], true);
    for (const [text, types, args] of [
      [terminal, 'text, text, int, bigint, text, text', `'t', 'k', 1, 1, 'completed', 'c'`],
      [sql.applyCancel, 'text, text, bigint, text, text', `'t', 'k', 1, 'c', NULL`],
    ] as const) {
      const plan = await genericPlan(store, text, types, args);
      expect(plan).toMatch(/Update on task_outbox[\s\S]*Index Scan using task_outbox_task_open on task_outbox/);
      expect(plan).not.toContain('task_outbox_app_dispatch');
    }
  });
});

describe('PostgreSQL plans of the statements that address one task', () => {
  /**
   * Each finds its task by id and checks its caller's auth key on the row. On an empty schema the
   * planner costs an index led by the auth key (the caller's working tasks, its listing order, its
   * idempotency keys) the same as the primary key, and a plan kept from there walks every task of
   * the caller on each write, however many it has, until an ANALYZE plans it again.
   */
  const callersIndex = /using (tasks_active_by_auth|tasks_list_order|tasks_idempotency_key) on tasks/;

  it('finds the task by its primary key, never through an index of its caller’s tasks', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('plan_owned'), { poolSize: 2 });
    open.push(store);
    const statements: Record<string, string> = {
      'a status write': appliedTransition(['status_message = $7'], false),
      'a terminal write': appliedTransition([], true),
      'a cancellation': sql.applyCancel,
      'an ask': sql.applyAsk,
      answers: sql.applyAnswers,
      'a heartbeat': sql.heartbeat,
      'a lease given back': sql.releaseLease,
      'the visible inputs': sql.selectVisibleInputs,
      'a fresh step': stepSql.freshStep,
      'the visible steps': stepSql.selectVisibleSteps,
    };
    for (const [what, text] of Object.entries(statements)) {
      const plan = await genericPlan(store, text);
      expect(plan, what).toMatch(/Index (Only )?Scan using tasks_pkey on tasks/);
      expect(plan, what).not.toMatch(callersIndex);
    }
    // A parent's children: through the index of children, not the caller's listing order.
    const children = await genericPlan(store, childrenSql.children);
    expect(children).toContain('using tasks_parent on tasks');
    expect(children).not.toMatch(callersIndex);
  });
});

describe('PostgreSQL admission plans', () => {
  /** Plans made so far for each statement prepared on the store's one connection, by statement text. */
  async function plansOf(store: PostgresStore, text: string): Promise<{ generic: number; custom: number }> {
    const client = await store.pool.connect();
    try {
      const rows = (
        await client.query<{ g: string; c: string }>(
          'SELECT generic_plans AS g, custom_plans AS c FROM pg_prepared_statements WHERE position($1 IN statement) > 0',
          [text.trim()],
        )
      ).rows;
      return { generic: rows.reduce((n, r) => n + Number(r.g), 0), custom: rows.reduce((n, r) => n + Number(r.c), 0) };
    } finally {
      client.release();
    }
  }

  it('executes every admission with its generic plan, alone or batched, with or without bounds, before and after the table grows', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('plan_admit'), { poolSize: 1 });
    open.push(store);
    const admit = async (n: number, bounded: boolean) => {
      for (let i = 0; i < n; i++) {
        const out = await store.admit(pgAdmission(bounded ? { maxActive: 100, maxStored: 1000, authKey: `tenant-a/b${i}` } : {}));
        expect(out.decision).toBe('ACCEPT_TASK');
      }
    };
    // Alone (one statement, no lock) and with the bounds' lock, in a transaction of the batch.
    await admit(8, false);
    await admit(8, true);
    expect(await plansOf(store, sql.admitTask)).toEqual({ generic: 16, custom: 0 });
    // The table grows and is analyzed: its generic plan is costed again, and still used.
    await store.pool.query(
      `INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, ttl_ms, expires_at_ms, poll_interval_ms, request_digest, request, cancel_requested, correlation_id, attempt, app)
       SELECT 'g' || i, 'tenant-g/' || (i % 10), 'slow', 'completed', 1, 1, 1, NULL, NULL, 1000, 'd', '{}', false, 'c', 0, 'default' FROM generate_series(1, 20000) AS i`,
    );
    await store.pool.query('ANALYZE tasks');
    await admit(8, true);
    expect(await plansOf(store, sql.admitTask)).toEqual({ generic: 24, custom: 0 });
  });
});
