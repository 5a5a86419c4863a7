import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.js';
import { createRuntime } from '../src/runtime/task-runtime.js';
import { MemoryStore } from '../src/store/memory/memory-store.js';
import type { TaskTool } from '../src/tools/tool.js';
import { until } from './support/until.js';
import { createTask } from '../src/runtime/requests/create-task.js';

describe('examples/own-tools/tools.mjs place_order', () => {
  it('runs its steps as a task: reserve, charge, a durable cool-down, ship, each recorded once', async () => {
    // The example imports the built package (`tasklatch`): `npm run build` first (npm test does).
    const tools = ((await import(new URL('../examples/own-tools/tools.mjs', import.meta.url).href)) as { default: TaskTool[] }).default;
    const runtime = createRuntime({ store: new MemoryStore(), tools, logger: createLogger('silent'), sweepIntervalMs: 0, worker: { pollMs: 50 } });
    await runtime.start();
    try {
      const auth = 'acme/alice';
      const created = await createTask(runtime.guard, {
        auth,
        tool: { name: 'place_order', execution: { taskSupport: 'required' } },
        request: { method: 'tools/call', params: { name: 'place_order', arguments: { sku: 'book-42', amountCents: 1999, coolDownMs: 200 }, task: {} } },
      });
      const taskId = created.record!.taskId;
      const done = await until(async () => {
        const r = (await runtime.guard.worker.lookup({ auth, taskId })).record;
        return r?.status === 'completed' ? r : undefined;
      });
      expect(done.result).toMatchObject({
        structuredContent: {
          sku: 'book-42',
          holdId: `hold:task:${taskId}:step:reserve`,
          chargeId: `charge:task:${taskId}:step:charge`,
          amountCents: 1999,
          attempt: 1,
        },
      });
      const journal = await runtime.guard.worker.lookupSteps({ auth, taskId });
      expect(journal.map((s) => `${s.name} ${s.status}`)).toEqual(['reserve completed', 'charge completed', 'cool-down woke', 'ship completed']);
    } finally {
      await runtime.close(100);
    }
  });
});
