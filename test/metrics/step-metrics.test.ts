import { afterEach, describe, expect, it } from 'vitest';
import { TaskMetrics } from '../../src/metrics/task-metrics.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { stepTool, text } from '../support/steps.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { cancelTask } from '../../src/runtime/requests/cancel-task.js';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const AUTH = 'acme/alice';

describe('step metrics', () => {
  it('time each attempt of a step by outcome, count retries, and count the tasks asleep', async () => {
    const flaky = stepTool('flaky', async (_args, ctx) => {
      await ctx.step.do('call', { retries: { limit: 2, baseDelayMs: 0 } }, ({ attempt }) => {
        if (attempt < 3) throw new Error('not yet');
        return attempt;
      });
      await ctx.step
        .do('doomed', () => {
          throw new Error('never');
        })
        .catch(() => undefined);
      return text('done');
    });
    const sleeper = stepTool('sleeper', async (_args, ctx) => {
      await ctx.step.sleep('long', 60_000);
      return text('never');
    });
    const runtime = createRuntime({
      store: new MemoryStore(),
      tools: [flaky, sleeper],
      logger: createLogger('silent'),
      sweepIntervalMs: 0,
      worker: { pollMs: 50 },
    });
    const metrics = new TaskMetrics(runtime.guard.context, { storeReadIntervalMs: 0, processMetrics: false });
    closers.push(
      () => runtime.close(50),
      () => metrics.close(),
    );
    await runtime.start();
    const admit = async (name: string) =>
      (
        await createTask(runtime.guard, {
          auth: AUTH,
          tool: { name, execution: { taskSupport: 'required' } },
          request: { method: 'tools/call', params: { name, arguments: {}, task: {} } },
        })
      ).record!.taskId;
    const first = await admit('flaky');
    const second = await admit('sleeper');
    await until(async () => ((await runtime.guard.worker.lookup({ auth: AUTH, taskId: first })).record?.status === 'completed' ? true : undefined));
    await until(async () => ((await runtime.guard.worker.lookupSteps({ auth: AUTH, taskId: second })).length === 1 ? true : undefined));
    const body = (await metrics.render()).body;
    expect(body).toMatch(/^tasklatch_step_duration_seconds_count\{tool="flaky",outcome="retrying"\} 2$/m);
    expect(body).toMatch(/^tasklatch_step_duration_seconds_count\{tool="flaky",outcome="completed"\} 1$/m);
    expect(body).toMatch(/^tasklatch_step_duration_seconds_count\{tool="flaky",outcome="failed"\} 1$/m);
    expect(body).toMatch(/^tasklatch_step_retries_total\{tool="flaky"\} 2$/m);
    expect(body).toMatch(/^tasklatch_decisions_total\{surface="step",decision="APPLY_STEP"\} 5$/m);
    expect(body).toMatch(/^tasklatch_tasks_sleeping 1$/m);
    expect((await cancelTask(runtime, { auth: AUTH, taskId: second })).kind).toBe('cancelled');
    expect((await metrics.render()).body).toMatch(/^tasklatch_tasks_sleeping 0$/m);
  });
});
