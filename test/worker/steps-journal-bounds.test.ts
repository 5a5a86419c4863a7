import { afterEach, describe, expect, it } from 'vitest';
import { StepFailedError } from '../../src/tools/step.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

describe.each(ALL_HARNESSES)('a task journal’s bounds on the $name store', (harness) => {
  it('a value past maxJournalBytes fails its step for good; a step past maxJournalSteps fails without running, nothing recorded; both again on the next run', async () => {
    const w = await stepWorld(harness, 'journal_bounds', { limits: { maxJournalSteps: 3, maxJournalBytes: 120 } });
    worlds.push(w);
    const calls = { a: 0, c: 0, d: 0, runs: 0 };
    const tool = stepTool('bounded', async (_args, ctx) => {
      calls.runs++;
      const seen: string[] = [];
      const step = async (name: string, fn: () => unknown) => {
        try {
          await ctx.step.do(name, fn);
          seen.push(`${name}: ok`);
        } catch (error) {
          if (!(error instanceof StepFailedError)) throw error;
          seen.push(`${name} (${error.attempts}): ${error.message}`);
        }
      };
      // '"' + 48 characters + '"': 50 bytes.
      await step('a', () => (calls.a++, 'x'.repeat(48)));
      await ctx.step.sleep('nap', 30);
      // 80 bytes beside the 50 recorded: past the 120.
      await step('c', () => (calls.c++, 'y'.repeat(78)));
      // A fourth row: a, nap and c's failure are the three the journal holds.
      await step('d', () => (calls.d++, 1));
      try {
        await ctx.step.sleep('e', 10);
        seen.push('e: ok');
      } catch (error) {
        seen.push(`e: ${error instanceof StepFailedError ? error.message : String(error)}`);
      }
      return text(seen.join('\n'));
    });
    w.worker(tool);
    const taskId = await w.admit('bounded');
    const done = await w.settled(taskId);
    expect(done.status).toBe('completed');
    expect(resultText(done).split('\n')).toEqual([
      'a: ok',
      'c (1): step "c" returned 80 bytes of JSON; with the 50 bytes this task\'s journal holds, that is more than the 120 bytes it may (maxJournalBytes)',
      'd (0): step "d" not recorded: this task\'s journal holds its 3 steps already (maxJournalSteps)',
      'e: step "e" not recorded: this task\'s journal holds its 3 steps already (maxJournalSteps)',
    ]);
    // Two runs (the sleep suspended the first): a and c ran once each, d never.
    expect(calls).toEqual({ a: 1, c: 1, d: 0, runs: 2 });
    const journal = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(journal.map((s) => `${s.position} ${s.name} ${s.status} ${s.valueBytes}`)).toEqual(['0 a completed 50', '1 nap woke 0', '2 c failed 0']);
  });
});
