import pg from 'pg';
import { CHANGES_CHANNEL } from '../src/store/postgres/listener.js';
import { taskResult } from './lib/mcp.js';
import { openBenchPostgres } from './lib/postgres.js';
import { onQuery } from './lib/round-trips.js';
import { linkMigrations } from './lib/migrations-link.js';
import { openServePair } from './scenarios/end-to-end.js';
import { sleep, summarize } from './lib/stats.js';

/**
 * `node dist/bench/bench/wake-trace.js [samples]`: where the time of a wake-up across processes
 * goes, as the end-to-end scenario measures it (two `tasklatch serve` on one schema, tasks/result
 * blocked in B, the terminal write by this process): from the write's answer to its notification
 * statement sent, to a listener of this process hearing the change (as B does), to the answer
 * reaching the client. Each segment's p50 / p99 / max.
 */
async function main(): Promise<void> {
  linkMigrations();
  const samples = Number(process.argv[2] ?? 200);
  const bench = await openBenchPostgres();
  const pair = await openServePair(process.cwd(), bench.schemaUrl('wake_trace'));
  const listener = new pg.Client({ connectionString: bench.url });
  await listener.connect();
  await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
  const heard = new Map<string, number>();
  listener.on('notification', (n) => {
    const taskId = (n.payload ?? '').split(':')[1];
    if (taskId !== undefined && !heard.has(taskId)) heard.set(taskId, performance.now());
  });
  let notifySent = 0;
  onQuery((text) => {
    if (text.includes('pg_notify')) notifySent = performance.now();
  });
  const segments = { sent: [] as number[], heard: [] as number[], woken: [] as number[] };
  try {
    for (let i = 0; i < samples + 10; i++) {
      const taskId = await pair.createRunning(i);
      await sleep(50);
      heard.clear();
      const answered = taskResult(pair.viaB, taskId).then(() => performance.now());
      await sleep(10);
      notifySent = 0;
      await pair.complete(taskId);
      const committed = performance.now();
      const done = await answered;
      await sleep(5);
      if (i < 10) continue;
      segments.sent.push(notifySent - committed);
      segments.heard.push((heard.get(taskId) ?? NaN) - committed);
      segments.woken.push(done - committed);
    }
    const row = (name: string, xs: number[]) => {
      const s = summarize(xs);
      console.log(`${name.padEnd(44)} p50 ${s.p50.toFixed(2)}  p99 ${s.p99.toFixed(2)}  max ${s.max.toFixed(2)} ms`);
    };
    console.log(`${samples} wake-ups, ms after the terminal write's answer:`);
    row('notification statement sent', segments.sent);
    row('a listener here hears the change', segments.heard);
    row('tasks/result answered at the client (B)', segments.woken);
  } finally {
    await listener.end();
    await pair.close();
    await bench.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
