import { afterEach, describe, expect, it, vi } from 'vitest';
import { StepFailedError } from '../../src/tools/step.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const world of worlds.splice(0)) await world.close();
});

describe.each(ALL_HARNESSES)('durable steps on the $name store', (harness) => {
  async function world(label: string, options: Parameters<typeof stepWorld>[2] = {}): Promise<StepWorld> {
    const w = await stepWorld(harness, label, options);
    worlds.push(w);
    return w;
  }

  it('records each step once: a run after a sleep gets the recorded values without running them again', async () => {
    const w = await world('replay');
    const calls = { charge: 0, receipt: 0, runs: 0 };
    const tool = stepTool('order', async (_args, ctx) => {
      calls.runs++;
      const charge = await ctx.step.do('charge', async () => {
        calls.charge++;
        return { id: `ch_${calls.charge}`, amount: 42, note: undefined };
      });
      await ctx.step.sleep('cool-down', 800);
      const receipt = await ctx.step.do('receipt', () => {
        calls.receipt++;
        return `receipt for ${charge.id}`;
      });
      const nothing = await ctx.step.do('side-effect-only', () => undefined);
      return text(`${receipt} ${JSON.stringify(charge)} ${String(nothing)} ${ctx.step.idempotencyKey('charge')}`);
    });
    w.worker(tool);
    const taskId = await w.admit('order');
    const sleeping = await until(async () => {
      const r = await w.record(taskId);
      return r?.statusMessage?.startsWith('sleeping until') === true ? r : undefined;
    });
    expect(sleeping.statusMessage).toMatch(/^sleeping until \d{4}-\d\d-\d\dT.+Z \(step "cool-down"\)$/);
    expect(sleeping.leaseOwner).toBeNull();
    const done = await w.settled(taskId);
    expect(done.status).toBe('completed');
    expect(resultText(done)).toBe(`receipt for ch_1 {"id":"ch_1","amount":42} undefined task:${taskId}:step:charge`);
    expect(calls).toEqual({ charge: 1, receipt: 1, runs: 2 });
    const journal = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(journal.map((s) => [s.position, s.name, s.kind, s.status, s.attempts])).toEqual([
      [0, 'charge', 'do', 'completed', 1],
      // Passed by the run after its wake: the row says it woke.
      [1, 'cool-down', 'sleep', 'woke', 0],
      [2, 'receipt', 'do', 'completed', 1],
      [3, 'side-effect-only', 'do', 'completed', 1],
    ]);
    expect(journal[0]!.value).toEqual({ id: 'ch_1', amount: 42 });
    expect(journal[3]!.value).toBeUndefined();
    expect(journal[1]!.wakeAt! - journal[1]!.startedAt).toBeGreaterThanOrEqual(800);
    const lines = (await w.store.auditTrail({ taskId })).filter((e) => e.surface === 'step');
    expect(lines.map((e) => [e.decision, e.detail])).toEqual([
      ['APPLY_STEP', 'charge@0 completed'],
      ['APPLY_STEP', 'cool-down@1 sleeping'],
      ['APPLY_STEP', 'cool-down@1 woke'],
      ['APPLY_STEP', 'receipt@2 completed'],
      ['APPLY_STEP', 'side-effect-only@3 completed'],
    ]);
  });

  it('retries with a durable wait: each failed attempt recorded, the task suspended between attempts', async () => {
    const w = await world('retry');
    const attempts: number[] = [];
    const tool = stepTool('flaky', async (_args, ctx) => {
      const value = await ctx.step.do('call-upstream', { retries: { limit: 3, baseDelayMs: 40, maxDelayMs: 80 } }, ({ attempt }) => {
        attempts.push(attempt);
        if (attempt < 3) throw new TypeError(`upstream down (${attempt})`);
        return attempt * 10;
      });
      return text(`got ${value}`);
    });
    const worker = w.worker(tool);
    const taskId = await w.admit('flaky');
    const done = await w.settled(taskId);
    expect(resultText(done)).toBe('got 30');
    expect(attempts).toEqual([1, 2, 3]);
    // The store shows the task completed once its write commits, which can be before the run
    // has heard its commit back: the run ends then.
    await until(() => (worker.executor.active === 0 ? true : undefined));
    const details = (await w.store.auditTrail({ taskId })).filter((e) => e.surface === 'step').map((e) => e.detail);
    expect(details).toEqual(['call-upstream@0 retrying', 'call-upstream@0 retrying', 'call-upstream@0 completed']);
    const [row] = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(row).toMatchObject({ status: 'completed', attempts: 3, value: 30 });
    // Each retry's wait gave the lease back and started a new claim: three claims in all.
    const claims = (await w.store.auditTrail({ taskId })).filter((e) => e.detail?.startsWith('claim ') === true);
    expect(claims).toHaveLength(3);
  });

  it('a retry waits in the store: its status says so, and its wake time is the outbox due time', async () => {
    // The wait is drawn from [0, 60 s) (full jitter); one drawn near 0 would be due, and claimed
    // again, before the reads below. Half the cap keeps the task waiting for this test's reads.
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const w = await world('retry-wait');
    const tool = stepTool('slow-retry', async (_args, ctx) => {
      await ctx.step.do('charge', { retries: { limit: 1, baseDelayMs: 60_000, maxDelayMs: 60_000 } }, () => {
        throw new Error('card declined');
      });
      return text('never');
    });
    w.worker(tool);
    const taskId = await w.admit('slow-retry');
    const waiting = await until(async () => {
      const r = await w.record(taskId);
      return r?.statusMessage?.startsWith('retrying') === true ? r : undefined;
    });
    expect(waiting.statusMessage).toMatch(/^retrying step "charge" \(attempt 2 of 2\) at \d{4}-.+Z$/);
    expect(waiting).toMatchObject({ status: 'working', leaseOwner: null, attempt: 0 });
    const [row] = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(row).toMatchObject({ status: 'retrying', attempts: 1, error: { message: 'card declined' } });
    const seen = await w.store.inspectTask({ taskId });
    expect(seen?.dispatch?.availableAt).toBe(row!.wakeAt);
    expect(row!.wakeAt! - row!.updatedAt).toBeLessThanOrEqual(30_000);
  });

  it('timeoutMs aborts an attempt; a final failure is a StepFailedError the handler may catch, thrown again on later runs without running the step', async () => {
    const w = await world('timeout');
    const calls = { slow: 0, runs: 0 };
    const tool = stepTool('timed', async (_args, ctx) => {
      calls.runs++;
      let caught = '';
      try {
        await ctx.step.do('slow', { timeoutMs: 80 }, ({ signal }) => {
          calls.slow++;
          return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted inside')), { once: true }));
        });
      } catch (error) {
        if (!(error instanceof StepFailedError)) throw error;
        caught = `${error.name} ${error.step} ${error.attempts}: ${error.message}`;
      }
      await ctx.step.sleep('pause', 50);
      return text(caught);
    });
    w.worker(tool);
    const taskId = await w.admit('timed');
    const done = await w.settled(taskId);
    expect(done.status).toBe('completed');
    expect(resultText(done)).toBe('StepFailedError slow 1: step "slow" timed out after 80 ms');
    expect(calls).toEqual({ slow: 1, runs: 2 });
    const [row] = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(row).toMatchObject({ status: 'failed', attempts: 1, error: { message: 'step "slow" timed out after 80 ms', name: 'TimeoutError' } });
  });

  it('a value over maxStepBytes or one JSON cannot carry fails the step for good, naming it', async () => {
    const w = await world('values', { limits: { maxStepBytes: 100 } });
    const calls = { big: 0 };
    const tool = stepTool('values', async (_args, ctx) => {
      const failures: string[] = [];
      const attempt = async (name: string, fn: () => unknown) => {
        try {
          await ctx.step.do(name, { retries: { limit: 3, baseDelayMs: 0 } }, fn);
          failures.push(`${name}: ok`);
        } catch (error) {
          failures.push(error instanceof StepFailedError ? `${name} (${error.attempts}): ${error.message}` : `other: ${String(error)}`);
        }
      };
      await attempt('big', () => {
        calls.big++;
        return 'x'.repeat(200);
      });
      await attempt('date', () => ({ at: new Date(0) }));
      await attempt('fn', () => [() => 1]);
      await attempt('nan', () => ({ n: Number.NaN }));
      await attempt('null', () => null);
      return text(failures.join('\n'));
    });
    w.worker(tool);
    const taskId = await w.admit('values');
    const done = await w.settled(taskId);
    const lines = resultText(done).split('\n');
    expect(lines[0]).toBe('big (1): step "big" returned 202 bytes of JSON, more than the 100 bytes a step may record');
    expect(lines[1]).toMatch(/^date \(1\): step "date" .*a Date at \$\.at \(return date\.toISOString\(\)\)$/);
    expect(lines[2]).toMatch(/^fn \(1\): step "fn" .*a function at \$\[0\]$/);
    expect(lines[3]).toMatch(/^nan \(1\): step "nan" .*NaN at \$\.n$/);
    expect(lines[4]).toBe('null: ok');
    // Not retried: a value that cannot be recorded would not be recordable the next time either.
    expect(calls.big).toBe(1);
    const journal = await w.svc.worker.lookupSteps({ auth: AUTH, taskId });
    expect(journal.map((s) => `${s.name} ${s.status}`)).toEqual(['big failed', 'date failed', 'fn failed', 'nan failed', 'null completed']);
    expect(journal[4]!.value).toBeNull();
  });
});
