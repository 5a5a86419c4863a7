import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { authKeyOf } from '../../src/tools/principal.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { BenchConfig } from '../lib/config.js';
import { callAsTask, httpClient, memoryClient, principalOf, taskResult, tasklatchServer } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { sleep } from '../lib/stats.js';
import { WAKE_SCENARIO } from '../lib/targets.js';

const RESULT = { content: [{ type: 'text', text: 'done' }] };
/** How long the bench lets a tasks/result request reach its wait before writing the terminal status. */
const SETTLE_MS = 10;

type StoreMaker = { name: string; open(): Promise<TaskStore>; cleanup(): Promise<void> };

async function storeMakers(pg: BenchPostgres): Promise<StoreMaker[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-e2e-'));
  let n = 0;
  return [
    { name: 'memory', open: async () => new MemoryStore(), cleanup: async () => undefined },
    { name: 'sqlite', open: () => SqliteStore.open(join(dir, `e2e-${++n}.db`)), cleanup: () => rm(dir, { recursive: true, force: true }) },
    { name: 'postgres', open: () => PostgresStore.open(pg.schemaUrl(`e2e${++n}`)), cleanup: async () => undefined },
  ];
}

/** create → the in-process executor runs the tool → tasks/result answers; one request chain per sample. */
async function createToResult(client: Client, n: number): Promise<void> {
  const created = await callAsTask(client, n);
  const result = await taskResult(client, created.task.taskId);
  if (result.isError === true) throw new Error(`task ${created.task.taskId} failed: ${JSON.stringify(result.content)}`);
}

async function concurrentSamples(clients: Client[], total: number, op: (client: Client, i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  let i = 0;
  await Promise.all(
    clients.map(async (client) => {
      while (i < total) {
        const k = i++;
        const t0 = performance.now();
        await op(client, k);
        out.push(performance.now() - t0);
      }
    }),
  );
  return out;
}

/**
 * A blocked tasks/result, woken by a terminal write: the request is sent, given SETTLE_MS to
 * reach its wait, then `complete` writes `completed`. The figure is the time from `complete`
 * returning (the commit acknowledged to the writer) to the response reaching the client.
 */
async function wakeSample(waiter: Client, taskId: string, complete: () => Promise<void>): Promise<number> {
  const answered = taskResult(waiter, taskId).then((result) => {
    if (result.isError === true) throw new Error(`task ${taskId}: unexpected error result`);
    return performance.now();
  });
  // Handled here too: should `complete` throw, the waiter's later rejection must not go unhandled.
  answered.catch(() => undefined);
  await sleep(SETTLE_MS);
  await complete();
  const committed = performance.now();
  return (await answered) - committed;
}

/** Scenario 4: end-to-end latency and wake-up latency of a blocked tasks/result. */
export async function endToEnd(results: Results, config: BenchConfig, pg: BenchPostgres, root: string): Promise<void> {
  console.log('\n[4] end to end: create → tool completes → tasks/result; wake-up after the terminal write');
  const samples = config.latencySamples;
  const makers = await storeMakers(pg);
  for (const maker of makers) {
    const store = await maker.open();
    const running = await tasklatchServer(store, { execute: true });
    const clients: Client[] = [];
    for (let i = 0; i < 16; i++) clients.push(await memoryClient(running, principalOf(i)));
    const first = clients[0] as Client;
    for (let i = 0; i < 20; i++) await createToResult(first, i);
    results.addLatency(
      'end to end (MCP in-memory, in-process executor)',
      `${maker.name}, 1 requestor`,
      await concurrentSamples([first], samples, (c, i) => createToResult(c, i)),
    );
    results.addLatency(
      'end to end (MCP in-memory, in-process executor)',
      `${maker.name}, 16 requestors`,
      await concurrentSamples(clients, samples, (c, i) => createToResult(c, i)),
    );
    await Promise.allSettled(clients.map((c) => c.close()));
    await running.close();

    // Wake-up in the same process: the waiter and the writer share the guard.
    const parked = await tasklatchServer(store, { execute: false });
    const waiter = await memoryClient(parked, principalOf(0));
    const auth = authKeyOf(principalOf(0));
    const wake = async () => {
      const created = await callAsTask(waiter, 0);
      return wakeSample(waiter, created.task.taskId, async () => {
        const out = await parked.runtime.guard.worker.transition({
          auth,
          taskId: created.task.taskId,
          write: { status: 'completed', expectedVersion: 1, result: RESULT },
        });
        if (out.decision !== 'APPLY_TRANSITION') throw new Error(`expected APPLY_TRANSITION, got ${out.decision}`);
      });
    };
    for (let i = 0; i < 10; i++) await wake();
    const woken: number[] = [];
    for (let i = 0; i < samples; i++) woken.push(await wake());
    results.addLatency(WAKE_SCENARIO, `${maker.name}, same process (MCP in-memory)`, woken);
    await waiter.close();
    await parked.close();
    await store.close();
  }
  await Promise.all(makers.map((m) => m.cleanup()));
  await acrossProcesses(results, config, pg, root);
}

/** Starts `tasklatch serve --http 127.0.0.1:0` and resolves with its URL once it listens. */
async function serve(root: string, storeUrl: string, tokensFile: string, exportsDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['dist/cli/main.js', 'serve', '--http', '127.0.0.1:0', '--store', storeUrl, '--auth-tokens', tokensFile, '--exports', exportsDir],
    {
      cwd: root,
      env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`tasklatch serve did not start: ${out}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /tasklatch listening on (\S+)/.exec(out);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`tasklatch serve exited with ${String(code)}: ${out}`)));
  });
  return { url, child };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Two `tasklatch serve` processes on one PostgreSQL schema, a client of each, and a third writer
 * (this process's own store): what a wake-up across processes is measured on (here and in
 * `bench/wake-trace.ts`).
 */
export interface ServePair {
  /** B, where tasks/result blocks. */
  viaB: Client;
  /** Creates through A a task A's worker claims and leaves running (export_ledger with a 10-minute delay); its id. */
  createRunning(n: number): Promise<string>;
  /** Writes `completed` from the third writer, against the version as stored now. */
  complete(taskId: string): Promise<void>;
  close(): Promise<void>;
}

export async function openServePair(root: string, storeUrl: string): Promise<ServePair> {
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-serve-'));
  const tokensFile = join(dir, 'tokens.json');
  await writeFile(tokensFile, JSON.stringify({ 'bench-wake': { tenant: 'bench', subject: 'wake' } }));
  const a = await serve(root, storeUrl, tokensFile, join(dir, 'exports'));
  const b = await serve(root, storeUrl, tokensFile, join(dir, 'exports'));
  const writer = await PostgresStore.open(storeUrl);
  const viaA = await httpClient(a.url, 'bench-wake');
  const viaB = await httpClient(b.url, 'bench-wake');
  return {
    viaB,
    createRunning: async (n) => (await callAsTask(viaA, n, 'export_ledger', { month: '2026-06', rows: 1, delayMs: 600_000 })).task.taskId,
    complete: async (taskId) => {
      // A's worker has claimed the task and may have written a status message: write
      // against the version as stored now, and again should it move in between.
      for (let attempt = 0; attempt < 5; attempt++) {
        const found = await writer.get({ authKey: 'bench/wake', taskId, now: Date.now() });
        if (found.record === null) throw new Error(`task ${taskId}: ${found.decision}`);
        const write = { status: 'completed' as const, expectedVersion: found.record.version, result: RESULT };
        const out = await writer.transition({ taskId, authKey: 'bench/wake', write, correlationId: randomUUID(), now: Date.now() });
        if (out.decision === 'APPLY_TRANSITION') return;
        if (out.decision !== 'BLOCK_STALE_VERSION') throw new Error(`expected APPLY_TRANSITION, got ${out.decision}`);
      }
      throw new Error(`task ${taskId}: version kept moving`);
    },
    close: async () => {
      await Promise.allSettled([viaA.close(), viaB.close()]);
      await writer.close();
      await Promise.all([stop(a.child), stop(b.child)]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The task is created through A (whose executor starts export_ledger with a long delay),
 * tasks/result blocks in B, and the bench process, a third writer, writes `completed`. B learns
 * of it by LISTEN/NOTIFY only.
 */
async function acrossProcesses(results: Results, config: BenchConfig, pg: BenchPostgres, root: string): Promise<void> {
  const pair = await openServePair(root, pg.schemaUrl('serve'));
  try {
    const wake = async (n: number) => {
      const taskId = await pair.createRunning(n);
      return wakeSample(pair.viaB, taskId, () => pair.complete(taskId));
    };
    // Both serve processes and their connections warm (code compiled, statements prepared) first.
    for (let i = 0; i < 30; i++) await wake(i);
    const woken: number[] = [];
    for (let i = 0; i < config.crossWakeSamples; i++) woken.push(await wake(i));
    results.addLatency(WAKE_SCENARIO, 'postgres, across processes (waiter in serve B, write by a third process, HTTP)', woken);
  } finally {
    await pair.close();
  }
}
