import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Step } from '../../src/tools/step.js';
import { RunLogger } from '../../src/worker/run-events.js';
import { TaskRun } from '../../src/worker/task-run.js';
import { memoryHarness } from '../support/stores.js';
import { AUTH, stepWorld, type StepWorld } from '../support/steps.js';

// Steps in concurrent branches (`Promise.all` of 2–4 branches of 1–4 steps each, then one step
// after the join) whose functions end in an order the test draws, and runs killed at a random
// point and run again from the journal, several times. Every run must replay without an order
// error, no recorded step may run again, and the last run's result must be the one a run without
// kills gives. Nothing here waits on the clock: a step's function waits on a promise the test
// resolves, and the test moves on by turns of the event loop.

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A handler of `shape` (steps per branch): each branch folds its steps' values, then a last step joins them. */
async function handler(step: Step, shape: readonly number[], work: (name: string, input: string) => Promise<string>): Promise<string> {
  const branches = await Promise.all(
    shape.map(async (steps, b) => {
      let acc = `b${b}`;
      for (let s = 0; s < steps; s++) {
        const name = `b${b}.s${s}`;
        const input = acc;
        acc = await step.do(name, () => work(name, input));
      }
      return acc;
    }),
  );
  const joined = branches.join('|');
  return step.do('join', () => work('join', joined));
}

interface Trial {
  shape: number[];
  /** Per run: after how many moves of the scheduler the run is killed (the last run is never killed). */
  kills: number[];
  /** The scheduler's draws: which pending step function ends next, or whether to let a turn pass. */
  draws: number[];
}

describe('steps in concurrent branches, under random timings and kills (memory store)', () => {
  let w: StepWorld;
  beforeAll(async () => {
    w = await stepWorld(memoryHarness, 'branches');
  });
  afterAll(async () => {
    await w.close();
  });

  /** Claims the task (the lease given back by the run before) and returns its run. */
  async function claim(taskId: string, owner: string): Promise<TaskRun> {
    const [record] = await w.svc.worker.claim({ owner, leaseMs: 60_000, limit: 1, maxAttempts: 1000, abandonedResult: { content: [] } });
    expect(record?.taskId).toBe(taskId);
    return new TaskRun(record!, { owner, leaseMs: 60_000, heartbeatMs: 30_000 }, w.svc.worker, RunLogger.to().run(record!, owner));
  }

  async function play(trial: Trial) {
    const taskId = await w.admit('branches');
    const draws = [...trial.draws];
    const pick = (n: number) => (draws.length === 0 ? 0 : draws.shift()! % n);
    // Once the draws run out, every move ends a function.
    const waitATurn = () => draws.length > 0 && draws.shift()! % 4 === 0;
    /** Step names whose rows the journal held after an earlier run; a function started for one of them ran a recorded step again. */
    const recorded = new Set<string>();
    const again: string[] = [];
    const finished: Record<string, number> = {};
    /** Functions that ran to their end in a run killed before their row was recorded. */
    const lost: Record<string, number> = {};
    let finishedThisRun: string[] = [];
    const pending: Array<{ name: string; resolve: () => void }> = [];
    const work = async (name: string, input: string) => {
      if (recorded.has(name)) again.push(name);
      await new Promise<void>((resolve) => pending.push({ name, resolve }));
      finished[name] = (finished[name] ?? 0) + 1;
      finishedThisRun.push(name);
      return `${input}>${name}`;
    };
    const fatal: string[] = [];
    for (let runNo = 0; ; runNo++) {
      const run = await claim(taskId, `w${runNo}`);
      const killAt = trial.kills[runNo];
      let outcome: { value?: string; error?: unknown } | null = null;
      const done = handler(run.steps.api(), trial.shape, work).then(
        (value) => (outcome = { value }),
        (error: unknown) => (outcome = { error }),
      );
      for (let moves = 0; outcome === null; moves++) {
        await turn();
        if (outcome !== null) break;
        if (moves > 5000) throw new Error(`run ${runNo} stuck: pending ${pending.map((p) => p.name).join(',')}`);
        if (killAt !== undefined && moves >= killAt) {
          run.stop('lease lost');
          break;
        }
        if (pending.length > 0 && !waitATurn()) pending.splice(pick(pending.length), 1)[0]!.resolve();
      }
      await done;
      pending.splice(0);
      if (run.fatal !== null) fatal.push(run.fatal.message);
      const journal = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
      for (const row of journal) recorded.add(row.name);
      for (const name of finishedThisRun) if (!recorded.has(name)) lost[name] = (lost[name] ?? 0) + 1;
      finishedThisRun = [];
      const ended = outcome as { value?: string; error?: unknown } | null;
      if (ended?.value !== undefined) {
        // Ended, so that no later claim finds it.
        await run.writeTerminal({ content: [] });
        return { value: ended.value, fatal, again, finished, lost, journal, runs: runNo + 1 };
      }
      expect(await run.release()).toBe(true);
      if (runNo > trial.kills.length + 5) throw new Error(`no end after ${runNo + 1} runs: ${String(ended?.error)}`);
    }
  }

  /** What the handler returns with no kill: each branch folds its own steps' names in order. */
  const expected = (shape: readonly number[]) => {
    const branches = shape.map((steps, b) => Array.from({ length: steps }, (_, s) => `>b${b}.s${s}`).reduce((acc, part) => acc + part, `b${b}`));
    return `${branches.join('|')}>join`;
  };

  const stats = { trials: 0, runs: 0 };
  it('replays every run without an order error, runs no recorded step again, and ends with the result of a run without kills', async () => {
    const trial = fc.record({
      shape: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 2, maxLength: 4 }),
      kills: fc.array(fc.integer({ min: 0, max: 10 }), { minLength: 1, maxLength: 4 }),
      draws: fc.array(fc.nat(), { minLength: 20, maxLength: 200 }),
    });
    await fc.assert(
      fc.asyncProperty(trial, async (t) => {
        const out = await play(t);
        stats.trials++;
        stats.runs += out.runs;
        expect(out.fatal).toEqual([]);
        expect(out.again).toEqual([]);
        expect(out.value).toBe(expected(t.shape));
        // One row per step at a position of its own; each function ran to its end once for its row (besides the ends a kill lost before their record).
        const names = out.journal.map((r) => r.name).sort();
        expect(names).toEqual([...t.shape.flatMap((steps, b) => Array.from({ length: steps }, (_, s) => `b${b}.s${s}`)), 'join'].sort());
        expect(new Set(out.journal.map((r) => r.position)).size).toBe(out.journal.length);
        for (const name of names) expect([name, (out.finished[name] ?? 0) - (out.lost[name] ?? 0)]).toEqual([name, 1]);
      }),
      { numRuns: 60, seed: 20261205, endOnFailure: true },
    );
    // The trials did kill runs: most tasks took several.
    expect(stats.runs).toBeGreaterThan(stats.trials * 2);
  });

  it('a run without kills gives the same result, and its concurrent steps are marked so', async () => {
    const out = await play({ shape: [2, 3], kills: [], draws: [1, 0, 1, 1, 1, 0, 1, 1, 1, 1] });
    expect(out.value).toBe(expected([2, 3]));
    // The first steps of both branches start together; the join runs alone.
    const flags = Object.fromEntries(out.journal.map((r) => [r.name, r.concurrent]));
    expect([flags['b0.s0'], flags['b1.s0'], flags.join]).toEqual([true, true, false]);
  });
});
