import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../src/runtime/log.js';
import { createRuntime } from '../src/runtime/task-runtime.js';
import { MemoryStore } from '../src/store/memory/memory-store.js';
import { defineTool, type TaskTool } from '../src/tools/tool.js';
import { createTask } from '../src/runtime/requests/create-task.js';
import { until } from './support/until.js';

/** The tools module of README's "Child tasks: fan-out", as pasted: its imports given, its default export returned. */
function readmeTools(): TaskTool[] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('### Child tasks: fan-out'));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
  const body = code
    .split('\n')
    .filter((line) => !line.startsWith('import '))
    .join('\n')
    .replace('export default', 'return');
  // eslint-disable-next-line @typescript-eslint/no-implied-eval, @typescript-eslint/no-unsafe-call -- the README's code, run as pasted
  return new Function('defineTool', 'z', body)(defineTool, z) as TaskTool[];
}

describe("README's fan-out example", () => {
  it('sums the squares of 1..5 through five child tasks, the list showing the parent only', async () => {
    const runtime = createRuntime({
      store: new MemoryStore(),
      tools: readmeTools(),
      callersIdentified: true,
      logger: createLogger('silent'),
      sweepIntervalMs: 0,
      worker: { pollMs: 50 },
    });
    await runtime.start();
    try {
      const auth = 'acme/alice';
      const created = await createTask(runtime.guard, {
        auth,
        tool: { name: 'sum_of_squares', execution: { taskSupport: 'required' } },
        request: { method: 'tools/call', params: { name: 'sum_of_squares', arguments: { count: 5 }, task: {} } },
      });
      const taskId = created.record!.taskId;
      const done = await until(async () => {
        const r = (await runtime.guard.worker.lookup({ auth, taskId })).record;
        return r?.status === 'completed' ? r : undefined;
      });
      expect(done.result).toMatchObject({ structuredContent: { sum: 55 } });
      const journal = await runtime.guard.worker.lookupSteps({ auth, taskId });
      expect(journal.map((s) => `${s.kind} ${s.status}`)).toEqual(Array(5).fill('child completed'));
      expect((await runtime.guard.requestor.list({ auth })).records!.map((r) => r.taskId)).toEqual([taskId]);
    } finally {
      await runtime.close(100);
    }
  });
});
