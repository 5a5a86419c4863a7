import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import PgBoss from 'pg-boss';
import type { TaskServer } from '../../src/wire-2025/server.js';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { pgCeiling, sqliteCeiling } from '../lib/ceilings.js';
import type { BenchConfig } from '../lib/config.js';
import {
  callAsTask,
  httpClient,
  httpFront,
  memoryClient,
  noopTool,
  principalOf,
  rotatingAuthKey,
  sdkTaskStack,
  tasklatchServer,
  taskCall,
  toolArgs,
  wireFront,
} from '../lib/mcp.js';
import { wireAdmitter } from '../lib/wire-admission.js';
import { schemaPool, type BenchPostgres } from '../lib/postgres.js';
import { runGroup, type Results, type Variant } from '../lib/results.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

/** Variant names, shared with the ratio and target computations. */
export const V = {
  mcpMemory: 'tasklatch MCP in-memory',
  /** The SDK 1.x client over HTTP: the 2025-11-25 wire's sessions. */
  mcpHttp: 'tasklatch MCP HTTP',
  /** A task call on the 2026-07-28 wire over HTTP (one POST each, no session). */
  wireHttp: 'tasklatch 2026-07-28 HTTP',
  service: 'tasklatch requestor.create (no wire)',
  sdk: 'SDK experimental tasks MCP in-memory',
  ceiling: 'raw ceiling (task+outbox+audit txn)',
  ceilingNotify: 'raw ceiling + pg_notify (diagnostic)',
  mcpNoListen: 'tasklatch MCP in-memory, no LISTEN (diagnostic)',
  serviceNoLimit: 'tasklatch requestor.create, maxActiveTasks off (diagnostic)',
  bossSend: 'pg-boss send',
  lifeTasklatch: 'lifecycle: tasklatch create→complete (service)',
  lifeBoss: 'lifecycle: pg-boss send→fetch→complete',
} as const;

export const GROUP = { memory: 'admission memory', sqlite: 'admission sqlite', postgres: 'admission postgres' } as const;

let counter = 0;
const next = () => ++counter;

async function expectTask(promise: Promise<{ task: { status: string } }>): Promise<void> {
  const result = await promise;
  if (result.task.status !== 'working') throw new Error(`expected a working task, got ${result.task.status}`);
}

/** HTTP requests retried after ECONNRESET (reported in results.json). */
export const httpResets = { count: 0 };

/**
 * An HTTP admission, sent once more when the connection was reset. The HTTP server keeps Node's
 * default keepAliveTimeout (5 s): a client that reuses a socket the server is closing at that
 * moment gets ECONNRESET. Between rounds the HTTP clients sit idle for longer than that.
 */
async function httpTask(send: () => Promise<{ task: { status: string } }>): Promise<void> {
  try {
    await expectTask(send());
  } catch (error) {
    if ((error as { cause?: { code?: unknown } }).cause?.code !== 'ECONNRESET') throw error;
    httpResets.count++;
    await expectTask(send());
  }
}

/** The wire and service variants every store shares. */
async function tasklatchVariants(server: TaskServer, maxC: number, diag: readonly number[]): Promise<{ variants: Variant[]; close(): Promise<void> }> {
  const memory: Client[] = [];
  for (let i = 0; i < maxC; i++) memory.push(await memoryClient(server, principalOf(i)));
  const { http, tokens } = await httpFront(server, maxC);
  const viaHttp: Client[] = [];
  for (const token of tokens) viaHttp.push(await httpClient(http.url, token));
  const modern = await wireFront(server, maxC);
  const wire = wireAdmitter(modern.http.url, modern.tokens);
  const descriptor = server.tools.descriptor(noopTool);
  // The same service without the active-task limit: no count of the caller's active tasks (and
  // on PostgreSQL no advisory lock) in the admission transaction.
  const unlimited = openGuard({ store: server.runtime.guard.context.store, capabilities: server.capabilities, limits: { maxActiveTasks: null } });
  const variants: Variant[] = [
    { name: V.mcpMemory, op: (w) => expectTask(callAsTask(memory[w] as Client, next())) },
    { name: V.mcpHttp, op: (w) => httpTask(() => callAsTask(viaHttp[w] as Client, next())) },
    {
      name: V.wireHttp,
      op: async (w) => {
        try {
          await wire.call(w, next());
        } catch (error) {
          // The same keep-alive race as `httpTask`'s, seen by the bench's own client.
          if ((error as { code?: unknown }).code !== 'ECONNRESET' && (error as Error).message !== 'the server closed the connection') throw error;
          httpResets.count++;
          await wire.call(w, next());
        }
      },
    },
    {
      name: V.service,
      op: async (w) => {
        const out = await createTask(server.runtime.guard, { auth: rotatingAuthKey(w), tool: descriptor, request: taskCall(next()) });
        if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
      },
    },
    {
      name: V.serviceNoLimit,
      concurrencies: diag,
      op: async (w) => {
        const out = await createTask(unlimited, { auth: rotatingAuthKey(w), tool: descriptor, request: taskCall(next()) });
        if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
      },
    },
  ];
  return {
    variants,
    close: async () => {
      await Promise.allSettled([...memory, ...viaHttp].map((c) => c.close()));
      wire.close();
      await http.close();
      await modern.http.close();
    },
  };
}

/** Scenarios 1–3: admission throughput, the raw ceilings and the alternatives, store by store. */
export async function admission(results: Results, config: BenchConfig, pg: BenchPostgres): Promise<void> {
  const maxC = Math.max(...config.concurrency);
  // Diagnostic variants run at 16 requestors only.
  const diag = config.concurrency.includes(16) ? [16] : [config.concurrency[0] ?? 1];

  console.log('\n[1/3] admission: memory store, and the SDK experimental tasks stack');
  {
    const server = await tasklatchServer(new MemoryStore(), { execute: false, rotateAuthKeys: true });
    const tl = await tasklatchVariants(server, maxC, diag);
    const sdk = sdkTaskStack();
    const sdkClients: Client[] = [];
    for (let i = 0; i < maxC; i++) sdkClients.push(await sdk.connect());
    await runGroup(results, GROUP.memory, [...tl.variants, { name: V.sdk, op: (w) => expectTask(callAsTask(sdkClients[w] as Client, next())) }], config);
    await tl.close();
    await Promise.allSettled(sdkClients.map((c) => c.close()));
    await sdk.close();
    await server.close();
  }

  console.log('\n[1/3] admission: SQLite store and its raw ceiling');
  {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-'));
    const path = join(dir, 'admission.db');
    const store = await SqliteStore.open(path);
    const server = await tasklatchServer(store, { execute: false, rotateAuthKeys: true });
    const tl = await tasklatchVariants(server, maxC, diag);
    const ceiling = sqliteCeiling(path);
    const authKeys = Array.from({ length: maxC }, (_, i) => `ceiling/${i}`);
    await runGroup(results, GROUP.sqlite, [...tl.variants, { name: V.ceiling, op: (w) => ceiling.op(authKeys[w] as string, next()) }], config);
    await tl.close();
    ceiling.close();
    await server.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }

  console.log('\n[1/3] admission: PostgreSQL store, its raw ceiling and pg-boss');
  {
    const store = await PostgresStore.open(pg.schemaUrl('admit'));
    const server = await tasklatchServer(store, { execute: false, rotateAuthKeys: true });
    // The same store without the LISTEN connection: shows what the echo of its own NOTIFYs costs.
    const quiet = await tasklatchServer(store, { execute: false, listen: false, rotateAuthKeys: true });
    const tl = await tasklatchVariants(server, maxC, diag);
    const quietClients: Client[] = [];
    for (let i = 0; i < maxC; i++) quietClients.push(await memoryClient(quiet, principalOf(i)));
    const pool = schemaPool(pg.url, pg.schemaName('admit'), 20);
    const boss = new PgBoss({ connectionString: pg.url, schema: pg.schemaName('boss'), max: 20, supervise: false, schedule: false, migrate: true });
    boss.on('error', (error: Error) => console.error('[pg-boss]', error.message));
    await boss.start();
    await boss.createQueue('bench_send');
    await boss.createQueue('bench_life');
    // Auth keys of their own: ceiling rows stay 'working' and would count against a caller's limit.
    const authKeys = Array.from({ length: maxC }, (_, i) => `ceiling/${i}`);
    // Finished tasks stay stored until their ttl: a requestor moves to a fresh auth key every 500
    // tasks, below the default bound of 1000 stored tasks per caller.
    const lifeCounts = new Map<number, number>();
    const lifeKey = (w: number) => {
      const n = lifeCounts.get(w) ?? 0;
      lifeCounts.set(w, n + 1);
      return `life/${w}/${Math.floor(n / 500)}`;
    };
    const descriptor = server.tools.descriptor(noopTool);
    const variants: Variant[] = [
      ...tl.variants,
      { name: V.ceiling, op: (w) => pgCeiling(pool, authKeys[w] as string, next()) },
      {
        name: V.bossSend,
        op: async () => {
          const id = await boss.send('bench_send', toolArgs(next()));
          if (id === null) throw new Error('pg-boss send returned no id');
        },
      },
      { name: V.ceilingNotify, concurrencies: diag, op: (w) => pgCeiling(pool, authKeys[w] as string, next(), true) },
      { name: V.mcpNoListen, concurrencies: diag, op: (w) => expectTask(callAsTask(quietClients[w] as Client, next())) },
      {
        name: V.lifeTasklatch,
        op: async (w) => {
          const auth = lifeKey(w);
          // Completed at once, so the caller never nears its active-task limit.
          const created = await createTask(server.runtime.guard, { auth, tool: descriptor, request: taskCall(next()) });
          if (created.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${created.decision}`);
          const done = await server.runtime.guard.worker.transition({
            auth,
            taskId: created.record.taskId,
            write: { status: 'completed', expectedVersion: created.record.version, result: { content: [{ type: 'text', text: 'ok' }] } },
          });
          if (done.decision !== 'APPLY_TRANSITION') throw new Error(`expected APPLY_TRANSITION, got ${done.decision}`);
        },
      },
      {
        name: V.lifeBoss,
        op: async () => {
          await boss.send('bench_life', toolArgs(next()));
          // work() runs exactly these two calls in its loop; called directly here there is no
          // polling delay between them, which is pg-boss's best case.
          for (let attempt = 0; attempt < 5; attempt++) {
            const jobs = await boss.fetch<unknown>('bench_life', { batchSize: 1 });
            const job = jobs[0];
            if (job === undefined) continue;
            await boss.complete('bench_life', job.id, { content: [{ type: 'text', text: 'ok' }] });
            return;
          }
          throw new Error('pg-boss fetch found no job after 5 attempts');
        },
      },
    ];
    await runGroup(results, GROUP.postgres, variants, config);
    await tl.close();
    await Promise.allSettled(quietClients.map((c) => c.close()));
    await boss.stop({ graceful: false, wait: true });
    await pool.end();
    await quiet.close();
    await server.close();
    await store.close();
  }
}
