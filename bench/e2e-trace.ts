import pg from 'pg';
import { PostgresStore } from '../src/store/postgres/store.js';
import { callAsTask, memoryClient, principalOf, taskResult, tasklatchServer } from './lib/mcp.js';
import { openBenchPostgres } from './lib/postgres.js';
import { onQuery } from './lib/round-trips.js';
import { linkMigrations } from './lib/migrations-link.js';

/**
 * `node dist/bench/bench/e2e-trace.js [samples]`: where the time of one end-to-end task on
 * PostgreSQL goes (one requestor, MCP in memory, in-process executor, as the end-to-end
 * scenario runs it): each statement the process sends, with when it was sent and when its
 * answer was seen, in ms from the create call; then a committed one-row INSERT and a
 * `SELECT 1`, timed alone, for what a commit and a round trip cost on this machine.
 */
let t0 = 0;
const trace: string[] = [];
onQuery((text, returned) => {
  const sent = performance.now() - t0;
  const label = text.trim().replace(/\s+/g, ' ').slice(0, 70);
  if (returned instanceof Promise) {
    returned.then(
      () => trace.push(`${sent.toFixed(2).padStart(7)} → ${(performance.now() - t0).toFixed(2).padStart(7)}  ${label}`),
      () => undefined,
    );
  } else trace.push(`${sent.toFixed(2).padStart(7)} (callback)  ${label}`);
});

async function timed(client: pg.Client, sql: string, n: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < n; i++) await client.query(sql);
  return ((performance.now() - t) * 1000) / n;
}

async function main(): Promise<void> {
  linkMigrations();
  const samples = Number(process.argv[2] ?? 3);
  const bench = await openBenchPostgres();
  const store = await PostgresStore.open(bench.schemaUrl('e2e_trace'));
  const running = await tasklatchServer(store, { execute: true });
  const client = await memoryClient(running, principalOf(0));
  try {
    // Warm: statements prepared, code compiled.
    for (let i = 0; i < 30; i++) await taskResult(client, (await callAsTask(client, i)).task.taskId);
    for (let i = 0; i < samples; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      trace.length = 0;
      t0 = performance.now();
      const created = await callAsTask(client, 100 + i);
      const createdAt = performance.now() - t0;
      await taskResult(client, created.task.taskId);
      const resultAt = performance.now() - t0;
      // Statements sent after the answer (the aggregated read audit) are traced too.
      await new Promise((resolve) => setTimeout(resolve, 100));
      console.log(`task ${i}: create answered at ${createdAt.toFixed(2)} ms, tasks/result at ${resultAt.toFixed(2)} ms; statements (sent → answer seen):`);
      for (const line of trace) console.log(`  ${line}`);
    }
    const raw = new pg.Client({ connectionString: bench.url });
    await raw.connect();
    try {
      const table = bench.schemaName('e2e_trace') + '.commit_probe';
      await raw.query(`CREATE TABLE ${table} (a int)`);
      console.log(
        `this machine: SELECT 1 round trip ${(await timed(raw, 'SELECT 1', 2000)).toFixed(0)} µs; committed one-row INSERT ${(await timed(raw, `INSERT INTO ${table} VALUES (1)`, 300)).toFixed(0)} µs`,
      );
    } finally {
      await raw.end();
    }
  } finally {
    await client.close();
    await running.close();
    await store.close();
    await bench.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
