import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatelessServer } from '../src/wire-2026/server.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import type { TaskStore } from '../src/store/types.js';
import { authKeyOf } from '../src/tools/principal.js';
import { noopTool, tasklatchServer, toolArgs, TOOL, TTL_MS } from './lib/mcp.js';
import { openBenchPostgres } from './lib/postgres.js';
import { linkMigrations } from './lib/migrations-link.js';
import { createTask } from '../src/runtime/requests/create-task.js';

/**
 * `node dist/bench/bench/handle-probe.js [sqlite|postgres]`: what a 2026-07-28 `tasks/get` costs
 * tasklatch without HTTP: CPU per `StatelessServer.handle` call, 16 calls in flight, on parsed
 * bodies. On SQLite it also times the store's read alone, and one statement by itself against
 * the same statement inside a read transaction already open (what starting a WAL read
 * transaction costs each statement that is its own snapshot).
 */
const ROUNDS = 4;
const ROUND_MS = 2000;
const STATEMENTS = 50_000;

const principal = { tenant: 'bench-0', subject: 'poller' };
const auth = authKeyOf(principal);
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

function perCall(label: string, run: (i: number) => unknown): void {
  const t = performance.now();
  for (let i = 0; i < STATEMENTS; i++) run(i);
  console.log(`  ${label}: ${(((performance.now() - t) * 1000) / STATEMENTS).toFixed(2)} µs`);
}

function sqliteReads(store: SqliteStore, ids: readonly string[]): void {
  const { db } = store;
  console.log(`SQLite statements, ${STATEMENTS} each (wall time per statement):`);
  const whole = db.prepare('SELECT * FROM tasks WHERE task_id = ? AND auth_key = ?');
  const one = db.prepare('SELECT task_id FROM tasks WHERE task_id = ? AND auth_key = ?');
  perCall('SELECT * by id, its own snapshot', (i) => whole.get(ids[i % ids.length], auth));
  perCall('SELECT task_id by id, its own snapshot', (i) => one.get(ids[i % ids.length], auth));
  db.exec('BEGIN');
  perCall('SELECT task_id by id, inside one open read transaction', (i) => one.get(ids[i % ids.length], auth));
  db.exec('COMMIT');
}

async function main(): Promise<void> {
  linkMigrations();
  const kind = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite';
  const pg = await openBenchPostgres();
  const dir = kind === 'sqlite' ? mkdtempSync(join(tmpdir(), 'tasklatch-handle-probe-')) : null;
  const store: TaskStore = dir !== null ? await SqliteStore.open(join(dir, 'probe.db')) : await PostgresStore.open(pg.schemaUrl('handle_probe'));
  const server = await tasklatchServer(store, { execute: false, limits: { maxActiveTasks: null, maxStoredTasks: null } });
  const stateless = new StatelessServer(server.runtime, {});
  try {
    const ids: string[] = [];
    for (let i = 0; i < 64; i++) {
      const request = { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(i), task: { ttl: TTL_MS } } };
      const created = await createTask(server.runtime.guard, { auth, tool: server.tools.descriptor(noopTool), request });
      if (created.record === null) throw new Error(`seeding answered ${created.decision}`);
      ids.push(created.record.taskId);
    }
    if (store instanceof SqliteStore) sqliteReads(store, ids);
    let calls = 0;
    const one = async (i: number) => {
      const taskId = ids[i % ids.length] as string;
      const body: unknown = { jsonrpc: '2.0', id: i, method: 'tasks/get', params: { taskId, _meta: META } };
      const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tasks/get', 'mcp-name': taskId };
      const reply = await stateless.handle({ body, headers, principal, signal: new AbortController().signal });
      if (reply.kind !== 'json' || reply.status !== 200) throw new Error(`tasks/get answered ${JSON.stringify(reply)}`);
      JSON.stringify(reply.body);
      calls++;
    };
    for (let round = 0; round < ROUNDS; round++) {
      const before = process.cpuUsage();
      const t0 = performance.now();
      calls = 0;
      await Promise.all(
        Array.from({ length: 16 }, async (_, k) => {
          for (let i = k; performance.now() - t0 < ROUND_MS; i += 16) await one(i);
        }),
      );
      const used = process.cpuUsage(before);
      console.log(`${kind} handle, round ${round}: ${calls} calls, ${((used.user + used.system) / calls).toFixed(1)} µs CPU per call`);
    }
  } finally {
    await server.close();
    await store.close();
    await pg.close();
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
