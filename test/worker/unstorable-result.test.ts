import { afterEach, describe, expect, it } from 'vitest';
import { openGuard } from '../../src/service/guard.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { Worker } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { AUTH, stepTool, text } from '../support/steps.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

// A handler's result holding text PostgreSQL cannot keep (a NUL inside a JSON string: jsonb
// refuses `\u0000`) is refused by the store before anything is written. Every run would make the
// same result, so the task must end failed saying why, once, not be run again for ever; a store
// that keeps such text stores the result as it is.

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe.each(ALL_HARNESSES)('a result the $name store cannot keep', (harness) => {
  it('ends the task once: failed saying the result cannot be stored where the store refuses it, completed where it keeps it', async () => {
    const store = await harness.open('unstorable_result');
    stops.push(() => store.close());
    const svc = openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100 } });
    let runs = 0;
    const tool = stepTool('nul_result', async () => {
      runs++;
      return text('before\u0000after');
    });
    const worker = new Worker(svc.worker, new ToolRegistry([tool]), { pollMs: 50, leaseMs: 3000 });
    worker.start();
    stops.push(() => worker.stop(100));
    const admitted = await createTask(svc, {
      auth: AUTH,
      tool: { name: 'nul_result', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'nul_result', arguments: {}, task: {} } },
    });
    const taskId = admitted.record!.taskId;
    const done = await until(async () => {
      const record = (await store.get({ authKey: AUTH, taskId, now: Date.now() })).record!;
      return record.status === 'completed' || record.status === 'failed' ? record : undefined;
    });
    const outcome = JSON.stringify(done.result);
    if (done.status === 'failed') {
      expect(harness.name).toBe('postgres');
      expect(outcome).toContain("the task's result cannot be stored");
    } else {
      expect(harness.name).not.toBe('postgres');
      expect(outcome).toContain('before\\u0000after');
    }
    expect(runs).toBe(1);
  });
});
