import { afterEach, describe, expect, it } from 'vitest';
import { CLAIM_SETTINGS } from '../../src/store/postgres/dispatch.js';
import { readBatchSql } from '../../src/store/postgres/read-batcher.js';
import { sql } from '../../src/store/postgres/statements.js';
import { appliedTransition } from '../../src/store/postgres/task-statements.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';

const open: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/**
 * The plan a connection keeps for a prepared statement is the generic plan it chose while the
 * tables were as they were then; on a fresh schema (empty tables, never analyzed) that is what a
 * store's connections keep while the tables grow, wherever autovacuum does not analyze them.
 * These read every task when they scan the table, so their generic plans on an empty schema
 * must find tasks by id.
 */
async function genericPlan(store: PostgresStore, text: string, types: string, args: string, settings: readonly string[] = []): Promise<string> {
  const client = await store.pool.connect();
  try {
    await client.query('BEGIN');
    for (const setting of settings) await client.query(setting);
    await client.query("SET LOCAL plan_cache_mode = 'force_generic_plan'");
    await client.query(`PREPARE plan_probe (${types}) AS ${text}`);
    const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE plan_probe (${args})`);
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
