import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGuard } from '../src/service/guard.js';
import { openStore } from '../src/store/open-store.js';
import { ToolRegistry } from '../src/tools/tool-registry.js';
import { Worker } from '../src/worker/worker.js';
import { ALL_CAPS } from '../test/support/records.js';
import { stepTool, text } from '../test/support/steps.js';
import { linkMigrations } from './lib/migrations-link.js';
import { openBenchPostgres } from './lib/postgres.js';
import { createTask } from '../src/runtime/requests/create-task.js';

/**
 * `node dist/bench/bench/journal-probe.js`: the memory a run takes to replay a large journal.
 * A task records 200 steps of 256 KiB (its journal 50 MiB of values, the bounds raised to let
 * it), then sleeps; the run after the sleep replays the 200 steps without running them. Its
 * peak RSS above the process's RSS before that run (after a GC) is measured, on SQLite and on
 * PostgreSQL, each in a process of its own, with the journal as it ships (each value kept as
 * its JSON text until the handler reaches its step) and as it was read before (every value
 * parsed when the journal is read, which the probe restores by reading each value at once).
 * Needs `--expose-gc` (the parent passes it to each child).
 */
const STEPS = 200;
const VALUE_CHARS = 256 * 1024 - 64;
const MiB = 1024 * 1024;

type Mode = 'as shipped' | 'parsed at read';

async function child(storeKind: string, url: string, mode: Mode): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const store = await openStore(url);
  const svc = openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100, maxJournalBytes: 64 * MiB } });
  if (mode === 'parsed at read') {
    const read = svc.worker.lookupSteps.bind(svc.worker);
    svc.worker.lookupSteps = async (input) => {
      const rows = await read(input);
      for (const row of rows) void row.value;
      return rows;
    };
  }
  let runs = 0;
  let base = 0;
  let peak = 0;
  const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
  let sampler: NodeJS.Timeout | undefined;
  const tool = stepTool('journal', async (_args, ctx) => {
    runs++;
    if (runs === 2) {
      gc();
      base = process.memoryUsage().rss;
      peak = base;
      sampler = setInterval(sample, 2);
    }
    for (let i = 0; i < STEPS; i++) {
      // What a handler does with a replayed value: reads it, and lets it go.
      const value = await ctx.step.do(`s${i}`, () => ({ i, data: String(i % 10).repeat(VALUE_CHARS) }));
      if (value.i !== i) throw new Error('replayed the wrong value');
      if (runs === 2) sample();
    }
    await ctx.step.sleep('pause', 1);
    return text('done');
  });
  const worker = new Worker(svc.worker, new ToolRegistry([tool]), { pollMs: 50, leaseMs: 120_000 });
  worker.start();
  const created = await createTask(svc, {
    auth: 'probe/alice',
    tool: { name: 'journal', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'journal', arguments: {}, task: {} } },
  });
  const taskId = created.record!.taskId;
  for (;;) {
    const record = (await svc.worker.lookup({ auth: 'probe/alice', taskId })).record;
    if (record !== null && record.status !== 'working') {
      if (record.status !== 'completed') throw new Error(`task ended ${record.status}`);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  clearInterval(sampler);
  await worker.stop(100);
  await store.close();
  console.log(JSON.stringify({ store: storeKind, mode, runs, peakAboveMiB: Math.round(((peak - base) / MiB) * 10) / 10 }));
}

async function main(): Promise<void> {
  const [storeKind, url, mode] = process.argv.slice(2);
  if (storeKind !== undefined && url !== undefined && mode !== undefined) return child(storeKind, url, mode as Mode);
  linkMigrations();
  const dir = mkdtempSync(join(tmpdir(), 'tasklatch-journal-'));
  const pg = await openBenchPostgres();
  const self = fileURLToPath(import.meta.url);
  console.log(`journal replay: ${STEPS} steps of 256 KiB; peak RSS of the replaying run above the process's before it`);
  try {
    for (const trial of [1, 2]) {
      for (const mode of ['parsed at read', 'as shipped'] as const) {
        const targets = [
          ['sqlite', `sqlite:${join(dir, `journal-${trial}-${mode.replace(/ /g, '-')}.db`)}`],
          ['postgres', pg.schemaUrl(`journal_${trial}_${mode.replace(/ /g, '_')}`)],
        ] as const;
        for (const [kind, url] of targets) {
          const out = execFileSync(process.execPath, ['--expose-gc', self, kind, url, mode], { encoding: 'utf8' });
          console.log(out.trim().split('\n').at(-1));
        }
      }
    }
  } finally {
    await pg.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
