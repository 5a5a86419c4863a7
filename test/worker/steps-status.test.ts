import { afterEach, describe, expect, it } from 'vitest';
import { getTask } from '../../src/runtime/requests/get-task.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

/** A promise the test resolves when it has looked. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe.each(ALL_HARNESSES)('the status message across runs on the $name store', (harness) => {
  async function world(label: string): Promise<StepWorld> {
    const w = await stepWorld(harness, label);
    worlds.push(w);
    return w;
  }

  /** The status message `tasks/get` answers with. */
  async function shown(w: StepWorld, taskId: string): Promise<string | null> {
    const out = await getTask({ guard: w.svc }, { auth: AUTH, taskId });
    if (out.kind !== 'task') throw new Error(`task ${taskId} not found`);
    return out.record.statusMessage;
  }

  it('a retried step that succeeds and a sleep that wakes leave no message naming them; the completed task has none', async () => {
    const w = await world('status');
    const afterRetry = gate();
    const afterWake = gate();
    const reached = { afterRetry: false, afterWake: false };
    const tool = stepTool('upload-then-rest', async (_args, ctx) => {
      await ctx.step.do('upload', { retries: { limit: 3, baseDelayMs: 20, maxDelayMs: 40 } }, ({ attempt }) => {
        if (attempt < 3) throw new Error(`upstream down (${attempt})`);
        return attempt;
      });
      await ctx.step.do('between', async () => {
        reached.afterRetry = true;
        await afterRetry.wait;
      });
      await ctx.step.sleep('cool-down', 600);
      await ctx.step.do('after', async () => {
        reached.afterWake = true;
        await afterWake.wait;
      });
      return text('done');
    });
    w.worker(tool);
    const taskId = await w.admit('upload-then-rest');

    await until(() => (reached.afterRetry ? true : undefined));
    expect(await shown(w, taskId)).toBeNull();
    afterRetry.open();

    const sleeping = await until(async () => {
      const message = await shown(w, taskId);
      return message?.startsWith('sleeping until') === true ? message : undefined;
    });
    expect(sleeping).toContain('(step "cool-down")');

    await until(() => (reached.afterWake ? true : undefined));
    const running = await w.record(taskId);
    expect(running).toMatchObject({ status: 'working', statusMessage: null });
    expect(await shown(w, taskId)).toBeNull();
    afterWake.open();

    const done = await w.settled(taskId);
    expect(done.status).toBe('completed');
    expect(done.statusMessage).toBeNull();
    expect(await shown(w, taskId)).toBeNull();
  });

  it('a task that ends right after its sleep keeps no sleeping message; a message its handler sets in its last run stays', async () => {
    const w = await world('status-end');
    const quiet = stepTool('nap-then-end', async (_args, ctx) => {
      await ctx.step.sleep('nap', 100);
      return text('done');
    });
    const talking = stepTool('nap-then-say', async (_args, ctx) => {
      await ctx.step.sleep('nap', 100);
      await ctx.reportStatus('all rows written');
      return text('done');
    });
    w.worker([quiet, talking]);
    const [a, b] = await Promise.all([w.admit('nap-then-end'), w.admit('nap-then-say')]);
    expect(await w.settled(a)).toMatchObject({ status: 'completed', statusMessage: null });
    expect(await w.settled(b)).toMatchObject({ status: 'completed', statusMessage: 'all rows written' });
  });

  it('a step whose retries run out leaves the failure, not the retry, as what the failed task says', async () => {
    const w = await world('status-fail');
    const tool = stepTool('always-down', async (_args, ctx) => {
      await ctx.step.do('upload', { retries: { limit: 1, baseDelayMs: 20, maxDelayMs: 40 } }, () => {
        throw new Error('upstream down');
      });
      return text('never');
    });
    w.worker(tool);
    const taskId = await w.admit('always-down');
    const done = await w.settled(taskId);
    expect(done.status).toBe('failed');
    expect(done.statusMessage === null || !done.statusMessage.startsWith('retrying')).toBe(true);
  });
});
