import { afterEach, describe, expect, it } from 'vitest';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { RecordStepInput, RecordStepOutcome, StepsOutcome, TaskRef } from '../../src/store/types.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { Worker } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { AUTH, resultText, stepTool, text } from '../support/steps.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

/** A memory store whose journal reads fail at first, and whose first step write is applied but answered with an error. */
class FlakyJournal extends MemoryStore {
  failedReads = 0;
  lostAnswers = 0;

  override async steps(input: TaskRef & { now: number }): Promise<StepsOutcome> {
    if (this.failedReads < 2) {
      this.failedReads++;
      throw new Error('connection reset');
    }
    return super.steps(input);
  }

  override async recordStep(input: RecordStepInput): Promise<RecordStepOutcome> {
    const out = await super.recordStep(input);
    if (this.lostAnswers === 0) {
      this.lostAnswers++;
      throw new Error('connection lost after the commit');
    }
    return out;
  }
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('steps when the store does not answer', () => {
  it('reads the journal again, finds a write of unknown fate recorded, and runs each step once', async () => {
    const store = new FlakyJournal();
    const svc = openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100 } });
    const runs = { charge: 0, ship: 0 };
    const tool = stepTool('flaky-store', async (_args, ctx) => {
      const charge = await ctx.step.do('charge', () => ++runs.charge);
      const ship = await ctx.step.do('ship', () => ++runs.ship);
      return text(`${charge} ${ship}`);
    });
    const worker = new Worker(svc.worker, new ToolRegistry([tool]), { pollMs: 50, leaseMs: 5000 });
    worker.start();
    stops.push(() => worker.stop(100));
    const created = await createTask(svc, {
      auth: AUTH,
      tool: { name: 'flaky-store', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'flaky-store', arguments: {}, task: {} } },
    });
    const taskId = created.record!.taskId;
    const done = await until(async () => {
      const r = (await svc.worker.lookup({ auth: AUTH, taskId })).record;
      return r?.status === 'completed' || r?.status === 'failed' ? r : undefined;
    });
    expect(done.status).toBe('completed');
    expect(resultText(done)).toBe('1 1');
    expect(runs).toEqual({ charge: 1, ship: 1 });
    expect(store.failedReads).toBe(2);
    expect(store.lostAnswers).toBe(1);
  });
});
