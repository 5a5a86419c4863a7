import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { openGuard } from '../../src/service/guard.js';
import { RunLogger } from '../../src/worker/run-events.js';
import { TaskRun } from '../../src/worker/task-run.js';
import { ALL_CAPS } from '../support/records.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, ELICIT, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

const CLAIM = { limit: 1, maxAttempts: 5, abandonedResult: { content: [], isError: true } };
const quiet = RunLogger.to();

describe.each(ALL_HARNESSES)('suspended steps on the $name store', (harness) => {
  async function world(label: string): Promise<StepWorld> {
    const w = await stepWorld(harness, label);
    worlds.push(w);
    return w;
  }

  const sleepingMessage = (w: StepWorld, taskId: string) =>
    until(async () => {
      const r = await w.record(taskId);
      return r?.statusMessage?.startsWith('sleeping') === true && r.leaseOwner === null ? r : undefined;
    });

  it('a sleeping task holds no worker slot: a one-slot worker runs another task meanwhile, then wakes the sleeper on time', async () => {
    const w = await world('slot');
    const sleeper = stepTool('sleeper', async (_args, ctx) => {
      await ctx.step.sleep('nap', 3000);
      return text('woke');
    });
    const quick = stepTool('quick', async () => text('quick'));
    // A long poll: the sleeper is woken by the worker that suspended it, at its wake time.
    const worker = w.worker([sleeper, quick], { concurrency: 1, pollMs: 60_000 });
    const sleeping = await w.admit('sleeper');
    const asleep = await sleepingMessage(w, sleeping);
    // The sleeper holds no slot: the one slot is free, and runs the other task.
    await until(() => (worker.executor.active === 0 ? true : undefined));
    const other = await w.admit('quick');
    expect((await w.settled(other, 'completed')).status).toBe('completed');
    // Woken by the worker at its wake time, not by the poll a minute away (which would outlast the test).
    const woke = await w.settled(sleeping);
    expect(woke.status).toBe('completed');
    const [nap] = await w.svc.worker.lookupSteps({ auth: AUTH, taskId: sleeping });
    expect(nap!.wakeAt! - nap!.startedAt).toBeGreaterThanOrEqual(3000);
    expect(woke.lastUpdatedAt).toBeGreaterThanOrEqual(nap!.wakeAt!);
    expect(asleep.version).toBeLessThan(woke.version);
  });

  it('a cancel reaches a sleeping task at once: one write, the outbox entry closed, no run after it', async () => {
    const w = await world('cancel');
    let runs = 0;
    w.worker(
      stepTool('dozer', async (_args, ctx) => {
        runs++;
        await ctx.step.sleep('long-nap', 60_000);
        return text('never');
      }),
    );
    const taskId = await w.admit('dozer');
    await sleepingMessage(w, taskId);
    const out = await w.svc.requestor.cancel({ auth: AUTH, taskId });
    expect(out.decision).toBe('CANCEL_TASK');
    // Cancelled by that one write, not when the nap would have ended.
    expect((await w.record(taskId))?.status).toBe('cancelled');
    expect((await w.store.inspectTask({ taskId }))?.dispatch?.doneAt).not.toBeNull();
    await sleep(200);
    expect(runs).toBe(1);
  });

  it('refuses a stale run’s step record (the old fence), records the holder’s, and refuses after the end', async () => {
    const w = await world('stale');
    const taskId = await w.admit('unserved');
    const [first] = await w.svc.worker.claim({ ...CLAIM, owner: 'old', leaseMs: 30 });
    await sleep(60);
    const [second] = await w.svc.worker.claim({ ...CLAIM, owner: 'new', leaseMs: 10_000 });
    expect(second!.version).toBeGreaterThan(first!.version);
    // A run that knows its lease lapsed asks the store before a side effect, and stops.
    const lapsed = new TaskRun(first!, { owner: 'old', leaseMs: 30, heartbeatMs: 10_000 }, w.svc.worker, quiet);
    let lapsedRan = 0;
    await expect(lapsed.steps.api().do('charge', () => ++lapsedRan)).rejects.toThrow('task lease lost');
    expect(lapsedRan).toBe(0);
    // One that believes it holds the lease (a paused process) runs the step; its record is refused.
    const old = new TaskRun(first!, { owner: 'old', leaseMs: 30, heartbeatMs: 10_000 }, w.svc.worker, quiet);
    old.leaseUntil = Date.now() + 10_000;
    let oldRan = 0;
    await expect(old.steps.api().do('charge', () => ++oldRan)).rejects.toThrow('task lease lost');
    expect(old.stopped).toBe('lease lost');
    // At least once inside a step: it ran; exactly once recorded: not by this run.
    expect(oldRan).toBe(1);
    expect(await w.svc.worker.lookupSteps({ auth: AUTH, taskId })).toEqual([]);
    const holder = new TaskRun(second!, { owner: 'new', leaseMs: 10_000, heartbeatMs: 10_000 }, w.svc.worker, quiet);
    expect(await holder.steps.api().do('charge', () => 'ch_new')).toBe('ch_new');
    const decisions = (await w.store.auditTrail({ taskId })).filter((e) => e.surface === 'step').map((e) => e.decision);
    expect(decisions).toEqual(['BLOCK_STALE_VERSION', 'APPLY_STEP']);
    await w.svc.requestor.cancel({ auth: AUTH, taskId });
    await expect(holder.steps.api().do('email', () => 1)).rejects.toThrow('task cancelled');
    expect(holder.stopped).toBe('cancelled');
    expect((await w.svc.worker.lookupSteps({ auth: AUTH, taskId })).map((s) => s.name)).toEqual(['charge']);
  });

  it('wakes its sleeper when the service clock runs slower than the timers (a slewed wall clock): the look waits until that clock says the task is due', async () => {
    const w = await world('slow');
    const t0 = Date.now();
    // Nine service milliseconds to ten of the timers': a wake timer fires before this clock
    // reaches the wake time, and a claim then finds the task not yet due.
    const slow = openGuard({
      store: w.store,
      capabilities: ALL_CAPS,
      limits: { pollInterval: 100 },
      clock: () => t0 + Math.floor((Date.now() - t0) * 0.9),
    });
    w.worker(
      stepTool('slow-nap', async (_args, ctx) => {
        await ctx.step.sleep('nap', 1000);
        return text('woke');
      }),
      { on: slow, pollMs: 60_000 },
    );
    const taskId = await w.admit('slow-nap', ELICIT, slow);
    const woke = await w.settled(taskId, 'completed', 5000);
    const [nap] = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    // Claimed once its wake time had come by the service's clock, long before the 60 s poll.
    expect(woke.lastUpdatedAt).toBeGreaterThanOrEqual(nap!.wakeAt!);
  });

  it('a task claimed before its wake time suspends again until the same time', async () => {
    const w = await world('early');
    let skew = 0;
    const early = openGuard({ store: w.store, capabilities: ALL_CAPS, clock: () => Date.now() + skew });
    const taskId = await w.admit('napper');
    const [claimed] = await w.svc.worker.claim({ ...CLAIM, owner: 'first', leaseMs: 10_000 });
    const first = new TaskRun(claimed!, { owner: 'first', leaseMs: 10_000, heartbeatMs: 10_000 }, w.svc.worker, quiet);
    await expect(first.steps.api().sleep('nap', 5000)).rejects.toThrow('task suspended');
    const wakeAt = first.wakeAt!;
    expect((await w.store.inspectTask({ taskId }))?.dispatch?.availableAt).toBe(wakeAt);
    skew = 10_000;
    const [again] = await early.worker.claim({ ...CLAIM, owner: 'early', leaseMs: 10_000 });
    skew = 0;
    expect(again?.taskId).toBe(taskId);
    const second = new TaskRun(again!, { owner: 'early', leaseMs: 10_000, heartbeatMs: 10_000 }, early.worker, quiet);
    await expect(second.steps.api().sleep('nap', 1)).rejects.toThrow('task suspended');
    expect(second.wakeAt).toBe(wakeAt);
    const seen = await w.store.inspectTask({ taskId });
    expect(seen?.dispatch?.availableAt).toBe(wakeAt);
    expect(seen?.record).toMatchObject({ leaseOwner: null, status: 'working' });
    expect(seen?.record.statusMessage).toBe(`sleeping until ${new Date(wakeAt).toISOString()} (step "nap")`);
  });

  it('sleepUntil a time already past records the sleep as passed (woke) and goes on without suspending', async () => {
    const w = await world('past');
    w.worker(
      stepTool('past', async (_args, ctx) => {
        await ctx.step.sleepUntil('deadline', new Date(Date.now() - 1000));
        await ctx.step.sleep('zero', 0);
        return text('went on');
      }),
    );
    const taskId = await w.admit('past');
    const done = await w.settled(taskId);
    expect(done.status).toBe('completed');
    expect(done.statusMessage).toBeNull();
    expect((await w.svc.worker.lookupSteps({ auth: AUTH, taskId })).map((s) => `${s.name} ${s.status}`)).toEqual(['deadline woke', 'zero woke']);
  });
});
