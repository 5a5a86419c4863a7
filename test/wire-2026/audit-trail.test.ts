import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { rpc } from '../support/stateless.js';

// README: every decision, accepted or refused, goes to the audit trail. On a fresh SQLite file
// served by the 2026-07-28 wire alone, the decisions that never reach a store write are counted
// in task_read_audit; nothing else is there to count them.

let store: SqliteStore;
let runtime: TaskRuntime;
let http: RunningHttp;

const ALICE = { token: 'token-alice' };

beforeAll(async () => {
  store = await SqliteStore.open(join(await mkdtemp(join(tmpdir(), 'tasklatch-audit-')), 'fresh.db'));
  runtime = createRuntime({
    store,
    tools: demoTools({ exportsDir: await mkdtemp(join(tmpdir(), 'tasklatch-audit-')) }),
    callersIdentified: true,
    logger: createLogger('silent'),
  });
  await runtime.start();
  http = await startHttpServer({
    runtime,
    generations: ['2026-07-28'],
    host: '127.0.0.1',
    port: 0,
    tokens: new Map([['token-alice', { tenant: 'acme', subject: 'alice' }]]),
  });
});

afterAll(async () => {
  await http.close();
  await runtime.close();
  await store.close();
});

/** The aggregated audit rows of the file, once the audit queue is stored. */
async function auditRows(): Promise<Array<Record<string, unknown>>> {
  await store.auditTrail({ taskId: 'none' });
  return store.db.prepare('SELECT auth_key, surface, decision, count, task_id, correlation_id FROM task_read_audit ORDER BY decision').all() as Array<
    Record<string, unknown>
  >;
}

describe('the 2026-07-28 wire on a fresh SQLite store', () => {
  it('leaves one audit line for a plain call and one for a refused task-required call', async () => {
    expect(await auditRows()).toEqual([]);

    const plain = await rpc(http.url, 'tools/call', { name: 'lookup', arguments: { account: 'cash' } }, ALICE);
    expect(plain.result).toMatchObject({ resultType: 'complete', structuredContent: { account: 'cash' } });
    const refused = await rpc(http.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06' } }, { ...ALICE, capabilities: {} });
    expect(refused.error?.code).toBe(-32021);

    const rows = await auditRows();
    expect(rows.map(({ auth_key, surface, decision, count, task_id }) => ({ auth_key, surface, decision, count, task_id }))).toEqual([
      { auth_key: 'acme/alice', surface: 'create', decision: 'ACCEPT_NORMAL', count: 1, task_id: null },
      { auth_key: 'acme/alice', surface: 'create', decision: 'BLOCK_TASK_REQUIRED', count: 1, task_id: null },
    ]);
    expect(rows.every((r) => typeof r.correlation_id === 'string' && r.correlation_id !== '')).toBe(true);
    // Nothing was stored for either: no task, no exact line.
    expect(store.db.prepare('SELECT count(*) AS n FROM tasks').get()).toEqual({ n: 0 });
    expect(store.db.prepare('SELECT count(*) AS n FROM task_audit').get()).toEqual({ n: 0 });

    // A second plain call in the same hour adds to its row, not a row of its own.
    await rpc(http.url, 'tools/call', { name: 'lookup', arguments: { account: 'fees' } }, ALICE);
    expect((await auditRows()).find((r) => r.decision === 'ACCEPT_NORMAL')?.count).toBe(2);
  });
});
