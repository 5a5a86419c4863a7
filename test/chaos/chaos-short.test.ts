import { describe, expect, it } from 'vitest';
import { runChaos } from './chaos-run.js';

// The short chaos run of the default test suite; `npm run chaos` runs the full one (500 tasks).
// Small enough to end well inside its deadline on a busy machine: its strength is in the full run.
describe('chaos (short)', () => {
  it('PostgreSQL: 2 servers, 3 workers killed at random, crashes before completion, one database restart', async () => {
    const report = await runChaos({
      kind: 'postgres',
      tasks: 20,
      servers: 2,
      workers: 3,
      concurrency: 8,
      cancelRatio: 0.2,
      duplicateRatio: 0.25,
      killEveryMs: [300, 800],
      crashBeforeComplete: 0.1,
      restartPostgres: true,
      leaseMs: 1500,
      timeoutMs: 150_000,
    });
    console.log(JSON.stringify(report.figures));
    console.log(report.otherExits.join('\n'));
    expect(report.violations).toEqual([]);
    expect(report.figures.accepted).toBe(20);
    expect(report.figures.otherExits).toBe(0);
  }, 180_000);

  it('SQLite: 2 servers with in-process workers, killed and restarted at random', async () => {
    const report = await runChaos({
      kind: 'sqlite',
      tasks: 16,
      servers: 2,
      workers: 0,
      concurrency: 6,
      cancelRatio: 0.2,
      duplicateRatio: 0.25,
      killEveryMs: [500, 1000],
      crashBeforeComplete: 0.1,
      restartPostgres: false,
      leaseMs: 1500,
      timeoutMs: 150_000,
    });
    console.log(JSON.stringify(report.figures));
    expect(report.violations).toEqual([]);
    expect(report.figures.accepted).toBe(16);
    expect(report.figures.otherExits).toBe(0);
  }, 180_000);
});
