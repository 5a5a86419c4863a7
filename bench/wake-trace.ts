import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { CHANGES_CHANNEL } from '../src/store/postgres/listener.js';
import { taskResult } from './lib/mcp.js';
import { openBenchPostgres } from './lib/postgres.js';
import { onQuery } from './lib/round-trips.js';
import { linkMigrations } from './lib/migrations-link.js';
import { openServePair } from './scenarios/end-to-end.js';
import { percentile, sleep } from './lib/stats.js';

/**
 * `node dist/bench/bench/wake-trace.js [samples]`: where the time of a wake-up across processes
 * goes, as the end-to-end scenario measures it (two `tasklatch serve` on one schema, tasks/result
 * blocked in B, the terminal write by this process): from the write's answer to its notification
 * statement sent, to a listener of this process hearing the change, to the answer reaching the
 * client; and, from marks the serve processes write (`lib/wake-marks.ts`, loaded with
 * `--import`), when B heard the change and when it wrote the result. Each segment's p50 / p90 /
 * p99 / max.
 */
async function main(): Promise<void> {
  linkMigrations();
  const samples = Number(process.argv[2] ?? 200);
  const bench = await openBenchPostgres();
  // The serve processes inherit these: each writes its marks into the directory.
  const marks = await mkdtemp(join(tmpdir(), 'tasklatch-wake-marks-'));
  process.env.TASKLATCH_WAKE_MARKS = marks;
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import ${new URL('./lib/wake-marks.js', import.meta.url).href}`.trim();
  // Heard from before the writer opens: its connections keep the query function they were made with.
  let notifySent = 0;
  onQuery((text) => {
    if (text.includes('pg_notify')) notifySent = performance.now();
  });
  const pair = await openServePair(process.cwd(), bench.schemaUrl('wake_trace'));
  const listener = new pg.Client({ connectionString: bench.url });
  await listener.connect();
  await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
  const heard = new Map<string, number>();
  listener.on('notification', (n) => {
    const taskId = (n.payload ?? '').split(':')[1];
    if (taskId !== undefined && !heard.has(taskId)) heard.set(taskId, performance.now());
  });
  const segments = { sent: [] as number[], heard: [] as number[], woken: [] as number[] };
  /** Per wake-up: its task, and when (on the clock the processes share) the write answered and the client had the result. */
  const wakes: Array<{ taskId: string; committed: number; answered: number }> = [];
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
      wakes.push({ taskId, committed: performance.timeOrigin + committed, answered: performance.timeOrigin + done });
    }
    const row = (name: string, xs: number[]) => {
      const [p50, p90, p99, max] = [50, 90, 99, 100].map((p) => percentile(xs, p).toFixed(2));
      console.log(`${name.padEnd(52)} p50 ${p50}  p90 ${p90}  p99 ${p99}  max ${max} ms  (n=${xs.length})`);
    };
    console.log(`${samples} wake-ups, ms after the terminal write's answer:`);
    // Negative: sent with the write's COMMIT, before its answer (announced inside its transaction).
    row('notification statement sent', segments.sent);
    row('a listener here hears the change', segments.heard);
    row('tasks/result answered at the client (B)', segments.woken);
    const inB = await segmentsInB(marks, wakes);
    console.log("the same wake-ups by segment, from the serve processes' marks:");
    row('write answered -> B hears the change', inB.heard);
    row('B hears -> B writes the result', inB.wrote);
    row('B writes -> the client has it', inB.read);
  } finally {
    await listener.end();
    await pair.close();
    await bench.close();
    await rm(marks, { recursive: true, force: true });
  }
}

/**
 * Joins each wake-up with the marks of the serve process that answered it (B: the one that wrote
 * a response naming its task, not a notification): when B heard the task's change, and when it
 * wrote the result.
 */
async function segmentsInB(dir: string, wakes: ReadonlyArray<{ taskId: string; committed: number; answered: number }>) {
  const processes: Array<Array<{ at: number; kind: string; text: string }>> = [];
  for (const name of await readdir(dir)) {
    const lines = (await readFile(join(dir, name), 'utf8')).split('\n').filter((line) => line !== '');
    processes.push(
      lines.map((line) => {
        const [at, kind, ...text] = line.split(' ');
        return { at: Number(at), kind: kind ?? '', text: text.join(' ') };
      }),
    );
  }
  const out = { heard: [] as number[], wrote: [] as number[], read: [] as number[] };
  for (const { taskId, committed, answered } of wakes) {
    for (const marks of processes) {
      // B's answer names the task; A's status notification to its own client does too, as a notification.
      // B may hear, and answer, before the write's answer reaches this process (a notification
      // sent with the COMMIT): marks from 5 ms before it count, long after the task's earlier changes.
      const wrote = marks.find(
        (m) => m.kind === 'wrote' && m.at >= committed - 5 && m.at <= answered && m.text.includes(taskId) && !m.text.includes('notifications/'),
      );
      const heard = marks.find((m) => m.kind === 'heard' && m.at >= committed - 5 && m.text.includes(`:${taskId}:`));
      if (wrote === undefined || heard === undefined) continue;
      out.heard.push(heard.at - committed);
      out.wrote.push(wrote.at - heard.at);
      out.read.push(answered - wrote.at);
      break;
    }
  }
  return out;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
