import { afterEach, describe, expect, it } from 'vitest';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe.each(ALL_HARNESSES)('now, random and uuid steps on the $name store', (harness) => {
  it('record their value once: the run after a sleep gets the same time, number and uuid', async () => {
    const w = await stepWorld(harness, 'values');
    worlds.push(w);
    const seen: Array<{ at: number; r: number; id: string }> = [];
    const tool = stepTool('stamped', async (_args, ctx) => {
      const at = await ctx.step.now('started-at');
      const r = await ctx.step.random('coin');
      const id = await ctx.step.uuid('request-id');
      seen.push({ at, r, id });
      await ctx.step.sleep('nap', 300);
      return text(JSON.stringify({ at, r, id }));
    });
    const before = Date.now();
    w.worker(tool);
    const taskId = await w.admit('stamped');
    const done = await w.settled(taskId);
    expect(done.status).toBe('completed');
    // The handler ran from the top after the wake, and got back what the first run recorded.
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    const first = seen[0]!;
    expect(JSON.parse(resultText(done))).toEqual(first);
    expect(first.at).toBeGreaterThanOrEqual(before);
    expect(first.at).toBeLessThanOrEqual(Date.now());
    expect(first.r).toBeGreaterThanOrEqual(0);
    expect(first.r).toBeLessThan(1);
    expect(first.id).toMatch(UUID);
    const journal = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(journal.map((s) => [s.position, s.name, s.kind, s.status, s.attempts, s.value])).toEqual([
      [0, 'started-at', 'do', 'completed', 1, first.at],
      [1, 'coin', 'do', 'completed', 1, first.r],
      [2, 'request-id', 'do', 'completed', 1, first.id],
      [3, 'nap', 'sleep', 'woke', 0, undefined],
    ]);
    const lines = (await w.store.auditTrail({ taskId })).filter((e) => e.surface === 'step');
    expect(lines.map((e) => e.detail)).toEqual(['started-at@0 completed', 'coin@1 completed', 'request-id@2 completed', 'nap@3 sleeping', 'nap@3 woke']);
  });
});
