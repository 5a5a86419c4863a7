import { afterEach, describe, expect, it } from 'vitest';
import type { TaskTool, ToolContext } from '../../src/tools/tool.js';
import type { RunLogSink } from '../../src/worker/run-events.js';
import type { Worker } from '../../src/worker/worker.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import { ALL_CAPS } from '../support/records.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

/** The sleep between a and b: ten minutes of the service's clock (a task lives an hour). */
const NAP = 10 * 60 * 1000;
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
    await ctx.step.sleep('rest', NAP);
    await step(ctx, 'b');
    return text('done');
  });
  return { state, tool };
}

describe.each(ALL_HARNESSES)('patch gates and a changed handler on the $name store', (harness) => {
  /**
   * A world whose service clock the test moves: a task sleeps for ten minutes, the worker of its
   * version stops, the clock moves past the sleep (`later`) and the next version's worker wakes it.
   */
  async function world(label: string) {
    const w = await stepWorld(harness, label);
    worlds.push(w);
    let skew = 0;
    const on: Guard = openGuard({ store: w.store, capabilities: ALL_CAPS, clock: () => Date.now() + skew, limits: { pollInterval: 100 } });
    return {
      w,
      on,
      later: () => void (skew += NAP),
      admit: () => w.admit('deploy_demo', undefined, on),
      worker: (tool: TaskTool, log?: RunLogSink) => w.worker(tool, { on, hooks: log === undefined ? {} : { log } }),
    };
  }
  const sleeping = (w: StepWorld, taskId: string) =>
    until(async () => ((await w.record(taskId))?.statusMessage?.startsWith('sleeping') === true ? true : undefined));
  /** A deploy: the worker running the old version stops, the clock passes the sleep, the new version's worker starts. */
  async function redeploy(old: Worker, state: { version: number }, version: number, later: () => void, start: () => Worker): Promise<Worker> {
    await old.stop(100);
    state.version = version;
    later();
    return start();
  }
  const journal = async (w: StepWorld, taskId: string) =>
    (await w.svc.worker.lookupSteps({ auth: AUTH, taskId })).map((s) => `${s.position} ${s.kind} ${s.name} ${s.status}`);
  const watch =
    (event: string, into: unknown[]): RunLogSink =>
    (_level, _message, fields) => {
      if (fields.event === event) into.push(event === 'step:journalBroken' ? fields.reason : { gates: fields.gates, position: fields.position });
    };

  it('a step added without a gate stops the old task’s run before it runs, naming the position and both entries', async () => {
    const { w, later, admit, worker } = await world('ungated');
    const counts: Record<string, number> = {};
    const { state, tool } = deployed(counts, new Map());
    const broken: unknown[] = [];
    const v1 = worker(tool);
    const taskId = await admit();
    await sleeping(w, taskId);
    await redeploy(v1, state, 2, later, () => worker(tool, watch('step:journalBroken', broken)));
    await until(async () => (broken.length > 0 ? true : undefined));
    expect(broken[0]).toBe('step order changed at position 1: the journal has sleep "rest" and this run asked for step "a2"');
    // Nothing of a2 ran, and nothing after it was recorded.
    expect(counts).toEqual({ a: 1 });
    expect(await journal(w, taskId)).toEqual(['0 do a completed', '1 sleep rest sleeping']);
  });

  it('behind patched(id): the old task takes the old path (false, nothing recorded), a new one records the marker and replays true', async () => {
    const { w, later, admit, worker } = await world('gated');
    const counts: Record<string, number> = {};
    const gates = new Map<string, boolean[]>();
    const { state, tool } = deployed(counts, gates);
    const v1 = worker(tool);
    const old = await admit();
    await sleeping(w, old);
    await redeploy(v1, state, 3, later, () => worker(tool));
    const fresh = await admit();
    await w.settled(old);
    await sleeping(w, fresh);
    later();
    const [oldDone, freshDone] = await Promise.all([w.settled(old), w.settled(fresh)]);
    expect([oldDone.status, resultText(oldDone), freshDone.status, resultText(freshDone)]).toEqual(['completed', 'done', 'completed', 'done']);
    // The old task asked once (after its wake) and was told false; the new one was told true before and after its sleep.
    expect(gates.get(old)).toEqual([false]);
    expect(gates.get(fresh)).toEqual([true, true]);
    expect(counts).toEqual({ a: 2, a2: 1, b: 2 });
    expect(await journal(w, old)).toEqual(['0 do a completed', '1 sleep rest woke', '2 do b completed']);
    expect(await journal(w, fresh)).toEqual(['0 do a completed', '1 patch add-a2 completed', '2 do a2 completed', '3 sleep rest woke', '4 do b completed']);
  });

  it('a task started by the version without the gate: told false, then the journal shows a2 ahead, so its marker is recorded and the task runs again told true', async () => {
    const { w, later, admit, worker } = await world('ungated-then-gated');
    const counts: Record<string, number> = {};
    const gates = new Map<string, boolean[]>();
    const { state, tool } = deployed(counts, gates);
    const revised: unknown[] = [];
    state.version = 2;
    const v2 = worker(tool);
    const taskId = await admit();
    await sleeping(w, taskId);
    await redeploy(v2, state, 3, later, () => worker(tool, watch('step:gatesRevised', revised)));
    const done = await w.settled(taskId);
    expect([done.status, resultText(done)]).toEqual(['completed', 'done']);
    expect(revised).toEqual([{ gates: ['add-a2'], position: 1 }]);
    expect(gates.get(taskId)).toEqual([false, true]);
    // a2 ran once (under version 2); nothing recorded ran again.
    expect(counts).toEqual({ a: 1, a2: 1, b: 1 });
    expect(await journal(w, taskId)).toEqual(['0 do a completed', '1 do a2 completed', '2 sleep rest woke', '3 patch add-a2 completed', '4 do b completed']);
  });

  it('a retired gate (its if dropped, the new path kept) leaves its marker unreached, and the task goes on', async () => {
    const { w, later, admit, worker } = await world('retired');
    const counts: Record<string, number> = {};
    const { state, tool } = deployed(counts, new Map());
    state.version = 3;
    const v3 = worker(tool);
    const taskId = await admit();
    await sleeping(w, taskId);
    await redeploy(v3, state, 4, later, () => worker(tool));
    const done = await w.settled(taskId);
    expect([done.status, resultText(done)]).toEqual(['completed', 'done']);
    expect(counts).toEqual({ a: 1, a2: 1, b: 1 });
  });

  it('a gate may carry a step’s name, and a gate asked twice in a run answers the same', async () => {
    const { w } = await world('same-name');
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
