import { afterEach, describe, expect, it } from 'vitest';
import type { ToolContext } from '../../src/tools/tool.js';
import type { RunLogSink } from '../../src/worker/run-events.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

/**
 * One tool deployed in versions: 1 is `a, sleep, b`; 2 adds `a2` after `a` with no gate; 3 adds
 * it behind `ctx.step.patched('add-a2')`; 4 retires the gate (the new path alone). The test
 * switches `version` while a task sleeps, as a deploy does between two runs of a task.
 */
function deployed(counts: Record<string, number>, gates: Map<string, boolean[]>) {
  const state = { version: 1 };
  const step = (ctx: ToolContext, name: string) => ctx.step.do(name, () => ((counts[name] = (counts[name] ?? 0) + 1), name));
  const tool = stepTool('deploy_demo', async (_args, ctx) => {
    await step(ctx, 'a');
    if (state.version === 2 || state.version === 4) await step(ctx, 'a2');
    if (state.version === 3) {
      const patched = await ctx.step.patched('add-a2');
      gates.set(ctx.taskId!, [...(gates.get(ctx.taskId!) ?? []), patched]);
      if (patched) await step(ctx, 'a2');
    }
    await ctx.step.sleep('rest', 60);
    await step(ctx, 'b');
    return text('done');
  });
  return { state, tool };
}

describe.each(ALL_HARNESSES)('patch gates and a changed handler on the $name store', (harness) => {
  async function world(label: string): Promise<StepWorld> {
    const w = await stepWorld(harness, label);
    worlds.push(w);
    return w;
  }
  const sleeping = (w: StepWorld, taskId: string) =>
    until(async () => ((await w.record(taskId))?.statusMessage?.startsWith('sleeping') === true ? true : undefined));
  const journal = async (w: StepWorld, taskId: string) =>
    (await w.svc.worker.lookupSteps({ auth: AUTH, taskId })).map((s) => `${s.position} ${s.kind} ${s.name} ${s.status}`);

  it('a step added without a gate stops the old task’s run before it runs, naming the position and both entries', async () => {
    const w = await world('ungated');
    const counts: Record<string, number> = {};
    const { state, tool } = deployed(counts, new Map());
    const broken: string[] = [];
    const log: RunLogSink = (_level, _message, fields) => {
      if (fields.event === 'step:journalBroken') broken.push(String(fields.reason));
    };
    w.worker(tool, { hooks: { log } });
    const taskId = await w.admit('deploy_demo');
    await sleeping(w, taskId);
    state.version = 2;
    await until(async () => (broken.length > 0 ? true : undefined));
    expect(broken[0]).toBe('step order changed at position 1: the journal has sleep "rest" and this run asked for step "a2"');
    // Nothing of a2 ran, and nothing after it was recorded.
    expect(counts).toEqual({ a: 1 });
    expect(await journal(w, taskId)).toEqual(['0 do a completed', '1 sleep rest sleeping']);
  });

  it('behind patched(id): the old task takes the old path (false, nothing recorded), a new one records the marker and replays true', async () => {
    const w = await world('gated');
    const counts: Record<string, number> = {};
    const gates = new Map<string, boolean[]>();
    const { state, tool } = deployed(counts, gates);
    w.worker(tool);
    const old = await w.admit('deploy_demo');
    await sleeping(w, old);
    state.version = 3;
    const fresh = await w.admit('deploy_demo');
    const [oldDone, freshDone] = await Promise.all([w.settled(old), w.settled(fresh)]);
    expect([oldDone.status, resultText(oldDone), freshDone.status, resultText(freshDone)]).toEqual(['completed', 'done', 'completed', 'done']);
    // The old task asked once (after its wake) and was told false; the new one was told true before and after its sleep.
    expect(gates.get(old)).toEqual([false]);
    expect(gates.get(fresh)).toEqual([true, true]);
    expect(counts).toEqual({ a: 2, a2: 1, b: 2 });
    expect(await journal(w, old)).toEqual(['0 do a completed', '1 sleep rest woke', '2 do b completed']);
    expect(await journal(w, fresh)).toEqual(['0 do a completed', '1 patch add-a2 completed', '2 do a2 completed', '3 sleep rest woke', '4 do b completed']);
  });

  it('a retired gate (its if dropped, the new path kept) leaves its marker unreached, and the task goes on', async () => {
    const w = await world('retired');
    const counts: Record<string, number> = {};
    const { state, tool } = deployed(counts, new Map());
    state.version = 3;
    w.worker(tool);
    const taskId = await w.admit('deploy_demo');
    await sleeping(w, taskId);
    state.version = 4;
    const done = await w.settled(taskId);
    expect([done.status, resultText(done)]).toEqual(['completed', 'done']);
    expect(counts).toEqual({ a: 1, a2: 1, b: 1 });
  });

  it('a gate may carry a step’s name, and a gate asked twice in a run answers the same', async () => {
    const w = await world('same-name');
    const answers: boolean[] = [];
    w.worker(
      stepTool('twice', async (_args, ctx) => {
        answers.push(await ctx.step.patched('ship'), await ctx.step.patched('ship'));
        await ctx.step.do('ship', () => 1);
        return text('ok');
      }),
    );
    const taskId = await w.admit('twice');
    const done = await w.settled(taskId);
    expect([done.status, answers]).toEqual(['completed', [true, true]]);
    expect(await journal(w, taskId)).toEqual(['0 patch ship completed', '1 do ship completed']);
  });
});
