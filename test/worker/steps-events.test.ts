import { afterEach, describe, expect, it } from 'vitest';
import { sendEvent } from '../../src/runtime/requests/send-event.js';
import { plainStep } from '../../src/tools/plain-step.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

describe.each(ALL_HARNESSES)('waits for events on the $name store', (harness) => {
  async function world(label: string): Promise<StepWorld> {
    const w = await stepWorld(harness, label);
    worlds.push(w);
    return w;
  }
  const send = (w: StepWorld, taskId: string, payload: unknown, auth = AUTH) =>
    sendEvent({ guard: w.svc }, { auth }, { taskId, type: 'payment.succeeded', payload });
  const waitingFor = (w: StepWorld, taskId: string) =>
    until(async () => {
      const r = await w.record(taskId);
      return r?.statusMessage?.startsWith('waiting') === true && r.leaseOwner === null ? r : undefined;
    });

  /** A tool that waits for a payment, then sleeps (so its result comes from a run that replays the wait). */
  const payer = (runs: { n: number }, timeoutMs = 60_000) =>
    stepTool('payer', async (_args, ctx) => {
      runs.n++;
      const paid = await ctx.step.waitForEvent<{ amount: number }>('paid', { type: 'payment.succeeded', timeoutMs });
      await ctx.step.sleep('settle', 1);
      return text(JSON.stringify(paid));
    });

  it('a waiting task holds no slot, and an event sent to it resumes it with the payload; a replay returns the same payload', async () => {
    const w = await world('wakes');
    const runs = { n: 0 };
    const quick = stepTool('quick', async () => text('quick'));
    // A long poll: only the send's notification wakes the waiting task in time.
    const worker = w.worker([payer(runs), quick], { concurrency: 1, pollMs: 60_000 });
    const taskId = await w.admit('payer');
    const waiting = await waitingFor(w, taskId);
    expect(waiting.statusMessage).toContain('"payment.succeeded"');
    await until(() => (worker.executor.active === 0 ? true : undefined));
    const other = await w.admit('quick');
    expect((await w.settled(other, 'completed')).status).toBe('completed');
    const sent = await send(w, taskId, { amount: 42 });
    expect(sent).toMatchObject({ kind: 'sent', seq: 1, woke: true });
    const done = await w.settled(taskId);
    expect([done.status, resultText(done)]).toEqual(['completed', '{"amount":42}']);
    // Three runs: the wait, the event taken (then the sleep), the sleep passed with the wait replayed.
    expect(runs.n).toBe(3);
    const steps = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(steps.map((s) => [s.name, s.kind, s.status, s.value])).toEqual([
      ['paid', 'event', 'completed', { amount: 42 }],
      ['settle', 'sleep', 'woke', undefined],
    ]);
  });

  it('keeps an event sent before the task reaches its wait, and the wait takes it', async () => {
    const w = await world('before');
    const runs = { n: 0 };
    const taskId = await w.admit('payer');
    // No worker yet: the task has not reached its wait.
    expect(await send(w, taskId, { amount: 7 })).toMatchObject({ kind: 'sent', seq: 1, woke: false });
    w.worker(payer(runs));
    const done = await w.settled(taskId);
    expect(resultText(done)).toBe('{"amount":7}');
  });

  it('gives null at the timeout, and refuses a send to the finished task, to another tenant, and to no task', async () => {
    const w = await world('timeout');
    const runs = { n: 0 };
    w.worker(payer(runs, 300), { pollMs: 60_000 });
    const taskId = await w.admit('payer');
    const done = await w.settled(taskId);
    expect([done.status, resultText(done)]).toEqual(['completed', 'null']);
    expect(await send(w, taskId, { late: true })).toMatchObject({ kind: 'refused', reason: 'terminal' });
    expect(await send(w, taskId, { late: true }, 'other/mallory')).toMatchObject({ kind: 'refused', reason: 'not-found', message: 'no such task' });
    expect(await send(w, 'no-such-task', 1)).toMatchObject({ kind: 'refused', reason: 'not-found' });
  });
});

describe('waitForEvent in a plain call', () => {
  it('is an error that says a wait needs a task', async () => {
    const step = plainStep(new AbortController().signal, 'call:1');
    await expect(step.waitForEvent('paid', { type: 'payment.succeeded', timeoutMs: 10 })).rejects.toThrow(/needs a task/);
  });
});
