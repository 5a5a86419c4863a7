import { describe, expect, it } from 'vitest';
import { runChaos } from './chaos-run.js';

// `npm run chaos`: the full run. TASKLATCH_CHAOS_TASKS overrides the task count (default 500).
const tasks = Number(process.env.TASKLATCH_CHAOS_TASKS ?? '500');

describe('chaos (full)', () => {
  it(`PostgreSQL: ${tasks} exports through 2 servers and 3 workers killed at random, one database restart`, async () => {
    const report = await runChaos({
      kind: 'postgres',
      tasks,
      servers: 2,
      workers: 3,
      concurrency: 16,
      cancelRatio: 0.15,
      duplicateRatio: 0.2,
      killEveryMs: [500, 1500],
      crashBeforeComplete: 0.05,
      restartPostgres: true,
      leaseMs: 2000,
      timeoutMs: 900_000,
      log: (line) => console.log(`[chaos postgres] ${line}`),
    });
    console.log(`[chaos postgres] ${JSON.stringify(report.figures)}`);
    for (const exit of report.otherExits) console.log(`[chaos postgres] unexpected exit: ${exit}`);
    expect(report.violations).toEqual([]);
    expect(report.figures.accepted).toBe(tasks);
    expect(report.figures.otherExits).toBe(0);
  }, 1_000_000);

  it(`SQLite: ${tasks} exports through 2 servers with in-process workers, killed and restarted at random`, async () => {
    const report = await runChaos({
      kind: 'sqlite',
      tasks,
      servers: 2,
      workers: 0,
      concurrency: 12,
      cancelRatio: 0.15,
      duplicateRatio: 0.2,
      killEveryMs: [1000, 2500],
      crashBeforeComplete: 0.05,
      restartPostgres: false,
      leaseMs: 2000,
      timeoutMs: 900_000,
      log: (line) => console.log(`[chaos sqlite] ${line}`),
    });
    console.log(`[chaos sqlite] ${JSON.stringify(report.figures)}`);
    for (const exit of report.otherExits) console.log(`[chaos sqlite] unexpected exit: ${exit}`);
    expect(report.violations).toEqual([]);
    expect(report.figures.accepted).toBe(tasks);
    expect(report.figures.otherExits).toBe(0);
  }, 1_000_000);
});
