import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { benchConfig } from './lib/config.js';
import { forTrial, openBenchPostgres } from './lib/postgres.js';
import { linkMigrations } from './lib/migrations-link.js';
import { machine, printReport } from './lib/report.js';
import { Results } from './lib/results.js';
import { computeRatiosAndTargets } from './lib/targets.js';
import { admission, httpResets } from './scenarios/admission.js';
import { contention } from './scenarios/contention.js';
import { endToEnd } from './scenarios/end-to-end.js';
import { lifecycle } from './scenarios/lifecycle.js';
import { pooler } from './scenarios/pooler.js';
import { addLifecycleTargets } from './lib/lifecycle-targets.js';
import { readsAtScale } from './scenarios/reads.js';
import { httpReads } from './scenarios/http-reads.js';
import { pollingCapacity } from './scenarios/polling-capacity.js';
import { serverMemory } from './scenarios/server-memory.js';
import { addStepsTargets, steps } from './scenarios/steps.js';
import { fanOut } from './scenarios/fan-out.js';
import { pollingConfig } from './lib/polling-config.js';
import { inTrials, trialsOf } from './lib/trials.js';
import { addAuditTargets, auditStorage } from './scenarios/audit-storage.js';
import { addPollingTargets } from './lib/polling-targets.js';
import { growth } from './scenarios/growth.js';
import { addGrowthTargets } from './lib/growth-targets.js';

/**
 * `npm run bench`: every scenario in one process, one after another, against memory, SQLite and
 * PostgreSQL; prints the tables and writes bench/results.json. TASKLATCH_BENCH_QUICK=1 runs the
 * smoke sizes; TASKLATCH_BENCH_ONLY=admission,e2e,lifecycle,pooler,reads,contention,http,polling,memory,steps,audit,fanout,growth runs a subset.
 * The noisy scenarios whose figures decide targets (admission, e2e, lifecycle, http, steps) run
 * three times in a full run (TASKLATCH_BENCH_TRIALS=n to change), their later runs at the
 * targets' concurrency only; a figure is the median of its runs.
 */

// Compiled to dist/bench/bench/run.js; the package root is three levels up.
const ROOT = new URL('../../../', import.meta.url);

/** The commit measured: TASKLATCH_BENCH_COMMIT, else git's HEAD (marked when the tree has changes). */
function commitOf(): string {
  if (process.env.TASKLATCH_BENCH_COMMIT !== undefined) return process.env.TASKLATCH_BENCH_COMMIT;
  try {
    const cwd = fileURLToPath(ROOT);
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], { cwd, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head} + uncommitted src changes` : head;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const quick = process.env.TASKLATCH_BENCH_QUICK === '1';
  const only = new Set(
    (process.env.TASKLATCH_BENCH_ONLY ?? 'admission,e2e,lifecycle,pooler,reads,contention,http,polling,memory,steps,audit,fanout,growth')
      .split(',')
      .map((s) => s.trim()),
  );
  const config = benchConfig(quick);
  linkMigrations();
  const pg = await openBenchPostgres();
  const results = new Results();
  console.log(`tasklatch bench (${quick ? 'quick' : 'full'}); PostgreSQL: ${pg.origin}, run ${pg.run}`);
  try {
    const trials = trialsOf(quick);
    // Later runs of a repeated scenario measure the concurrency its targets are judged at.
    const at16 = (trial: number) => (trial === 0 ? config : { ...config, concurrency: [16] });
    const polling = pollingConfig(quick);
    if (only.has('admission')) await inTrials(results, trials, (r, t) => admission(r, at16(t), forTrial(pg, t)));
    if (only.has('e2e')) await inTrials(results, trials, (r, t) => endToEnd(r, config, forTrial(pg, t), fileURLToPath(ROOT)));
    if (only.has('lifecycle')) await inTrials(results, trials, (r, t) => lifecycle(r, at16(t), forTrial(pg, t)));
    if (only.has('pooler')) await inTrials(results, trials, (r, t) => pooler(r, config, forTrial(pg, t)));
    if (only.has('reads')) await readsAtScale(results, config, pg);
    if (only.has('contention')) await contention(results, config, pg);
    if (only.has('http')) await inTrials(results, trials, (r, t) => httpReads(r, t === 0 ? polling : { ...polling, pollers: [16] }, forTrial(pg, t)));
    if (only.has('polling')) await pollingCapacity(results, polling, pg);
    if (only.has('memory')) await serverMemory(results, polling, pg);
    if (only.has('steps')) await inTrials(results, trials, (r, t) => steps(r, quick, forTrial(pg, t)));
    if (only.has('audit')) await auditStorage(results, quick, pg);
    if (only.has('fanout')) await fanOut(results, quick, pg);
    if (only.has('growth')) await growth(results, config, pg);
  } finally {
    await pg.close();
  }
  if (httpResets.count > 0) results.notes.push(`HTTP admissions retried after ECONNRESET (keep-alive race): ${httpResets.count}`);
  computeRatiosAndTargets(results, config);
  addPollingTargets(results);
  addLifecycleTargets(results);
  addStepsTargets(results);
  addAuditTargets(results);
  addGrowthTargets(results, quick);
  const wallMs = performance.now() - started;
  const meta = {
    ...(await machine(pg.version)),
    commit: commitOf(),
    quick,
    scenarios: [...only],
    trials: trialsOf(quick),
    config,
    wallSeconds: Math.round(wallMs / 100) / 10,
    finishedAt: new Date().toISOString(),
  };
  printReport(results, meta);
  const out = new URL('bench/results.json', ROOT);
  await writeFile(out, `${JSON.stringify({ meta, ...results }, null, 2)}\n`);
  console.log(`\nwrote ${fileURLToPath(out)} (wall ${meta.wallSeconds} s)`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
