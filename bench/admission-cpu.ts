import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pg from 'pg';
import type { TaskServer } from '../src/wire-2025/server.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import { pgCeiling, sqliteCeiling } from './lib/ceilings.js';
import {
  callAsTask,
  httpClient,
  httpFront,
  memoryClient,
  noopTool,
  principalOf,
  rotatingAuthKey,
  tasklatchServer,
  TOOL,
  toolArgs,
  TTL_MS,
  wireFront,
} from './lib/mcp.js';
import { DEFAULT_BENCH_PG_URL, schemaPool } from './lib/postgres.js';
import { roundTrips } from './lib/round-trips.js';
import { linkMigrations } from './lib/migrations-link.js';
import { wireAdmitter } from './lib/wire-admission.js';
import { createTask } from '../src/runtime/requests/create-task.js';
import { startCpuWindow, type CpuSample } from './lib/backend-cpu.js';

/**
 * `node dist/bench/bench/admission-cpu.js <sqlite|postgres> <mcp|http|wire|service|ceiling> [ops] [requestors]`:
 * one admission variant alone, `requestors` at once, and per admission: this process's CPU, the
 * SQLite statements run (transactions' BEGIN and COMMIT not counted) or the PostgreSQL round
 * trips and the CPU of the store's backends. Run it under `node --cpu-prof` to see where the CPU goes.
 */

let statements = 0;
const timing = process.env.TIMING === '1';
const timings = new Map<string, number>();

/** Counts every prepared statement run on a better-sqlite3 connection of this process. */
function countStatements(): void {
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  for (const name of ['run', 'get', 'all', 'iterate']) {
    const original = proto[name] as (...args: unknown[]) => unknown;
    proto[name] = function (this: { source: string }, ...args: unknown[]) {
      statements++;
      if (!timing) return original.apply(this, args);
      const t0 = process.cpuUsage();
      try {
        return original.apply(this, args);
      } finally {
        const key = this.source.replace(/\s+/g, ' ').slice(0, 90);
        const used = process.cpuUsage(t0);
        timings.set(key, (timings.get(key) ?? 0) + (used.user + used.system) / 1000);
      }
    };
  }
}

async function main(): Promise<void> {
  linkMigrations();
  const [kind = 'sqlite', variant = 'mcp', opsArg = '20000', requestorsArg = '16'] = process.argv.slice(2);
  const ops = Number(opsArg);
  const requestors = Number(requestorsArg);
  countStatements();
  roundTrips();
  const cleanups: Array<() => Promise<void>> = [];
  let server: TaskServer;
  let ceiling: (w: number, n: number) => Promise<void>;
  // The store's backends (PostgreSQL), told apart by their application name.
  let backendWindow: (() => Promise<() => Promise<CpuSample>>) | null = null;
  if (kind === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-cpu-'));
    const path = join(dir, 'admission.db');
    const store = await SqliteStore.open(path);
    server = await tasklatchServer(store, { execute: false, rotateAuthKeys: true });
    const raw = sqliteCeiling(path);
    ceiling = (w, n) => raw.op(`ceiling/${w}`, n);
    cleanups.push(async () => {
      raw.close();
      await server.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    });
  } else {
    const schema = `tlcpu_${process.pid}`;
    const url = new URL(process.env.TASKLATCH_BENCH_PG_URL ?? DEFAULT_BENCH_PG_URL);
    url.searchParams.set('schema', schema);
    url.searchParams.set('application_name', schema);
    const store = await PostgresStore.open(url.toString());
    server = await tasklatchServer(store, { execute: false, rotateAuthKeys: true });
    const pool = schemaPool(process.env.TASKLATCH_BENCH_PG_URL ?? DEFAULT_BENCH_PG_URL, schema, 20);
    ceiling = (w, n) => pgCeiling(pool, `ceiling/${w}`, n);
    const monitor = new pg.Client({ connectionString: process.env.TASKLATCH_BENCH_PG_URL ?? DEFAULT_BENCH_PG_URL });
    await monitor.connect();
    backendWindow = () => startCpuWindow(monitor, { applicationName: schema });
    cleanups.push(async () => {
      await monitor.end();
      await pool.end();
      await server.close();
      await store.close();
      const admin = new pg.Client({ connectionString: process.env.TASKLATCH_BENCH_PG_URL ?? DEFAULT_BENCH_PG_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    });
  }
  const descriptor = server.tools.descriptor(noopTool);
  const clients: Client[] = [];
  let op: (w: number, n: number) => Promise<unknown>;
  if (variant === 'mcp') {
    for (let i = 0; i < requestors; i++) clients.push(await memoryClient(server, principalOf(i)));
    op = (w, n) => callAsTask(clients[w] as Client, n);
  } else if (variant === 'http') {
    const { http, tokens } = await httpFront(server, requestors);
    for (const token of tokens) clients.push(await httpClient(http.url, token));
    cleanups.unshift(() => http.close());
    op = (w, n) => callAsTask(clients[w] as Client, n);
  } else if (variant === 'wire') {
    // The 2026-07-28 wire over HTTP, with the bench's own light client.
    const { http, tokens } = await wireFront(server, requestors);
    const wire = wireAdmitter(http.url, tokens);
    cleanups.unshift(async () => {
      wire.close();
      await http.close();
    });
    op = (w, n) => wire.call(w, n);
  } else if (variant === 'service') {
    op = (w, n) =>
      createTask(server.runtime.guard, {
        auth: rotatingAuthKey(w),
        tool: descriptor,
        request: { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(n), task: { ttl: TTL_MS } } },
      });
  } else {
    op = ceiling;
  }
  let n = 0;
  const run = async (count: number) => {
    let left = count;
    await Promise.all(
      Array.from({ length: requestors }, async (_, w) => {
        while (left > 0) {
          left--;
          await op(w, ++n);
        }
      }),
    );
  };
  await run(Math.min(2000, ops / 5));
  timings.clear();
  const s0 = statements;
  const r0 = roundTrips();
  const backends = await backendWindow?.();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await run(ops);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const pgCpu = await backends?.();
  const perOp = (x: number) => (x / ops).toFixed(2);
  console.log(
    `${kind} ${variant} @${requestors}: ${Math.round((ops * 1000) / wall)}/s, node CPU ${perOp(cpu.user + cpu.system)} µs/op,` +
      ` ${perOp(statements - s0)} statements/op, ${perOp(roundTrips() - r0)} pg round trips/op` +
      (pgCpu === undefined ? '' : `, backends' CPU ${perOp(pgCpu.pgMs * 1000)} µs/op`),
  );
  for (const [sql, ms] of [...timings].sort((a, b) => b[1] - a[1])) console.log(`  ${((ms * 1000) / ops).toFixed(1).padStart(7)} µs/op  ${sql}`);
  await Promise.allSettled(clients.map((c) => c.close()));
  for (const cleanup of cleanups) await cleanup();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
