import { awaitTaskResult } from '../../../src/service/result-wait.js';
import { z } from 'zod';
import type { WireRequest } from '../../../src/core/types.js';
import { createLogger } from '../../../src/runtime/log.js';
import { createRuntime } from '../../../src/runtime/task-runtime.js';
import { PostgresStore } from '../../../src/store/postgres/store.js';
import { defineTool } from '../../../src/tools/tool.js';
import { TTL_MS } from '../../lib/mcp.js';
import type { SideStart } from './protocol.js';
import { LOOP_STEPS, type LoopState, type StepsSide } from './side.js';
import { createTask } from '../../../src/runtime/requests/create-task.js';

/** Loop states by key: the looping task's handler runs in this process and finds its state here. */
const loops = new Map<string, LoopState>();

/** A tool of `steps` durable steps, each returning its index; with `loop`, it steps until told to stop or `LOOP_STEPS` are done. */
const stepsTool = defineTool({
  name: 'bench_steps',
  description: 'Records `steps` durable steps, each returning its index. Benchmark tool.',
  inputSchema: z.object({ steps: z.number().int().min(0), loop: z.string().optional() }),
  execution: { taskSupport: 'required' },
  handler: async (args, ctx) => {
    const state = args.loop === undefined ? undefined : loops.get(args.loop);
    if (args.loop !== undefined && state === undefined) throw new Error(`no loop state ${args.loop}`);
    let sum = 0;
    for (let i = 0; state === undefined ? i < args.steps : !state.stop && i < LOOP_STEPS; i++) {
      sum += await ctx.step.do(`s${i}`, () => i);
      if (state !== undefined) state.checkpoints++;
    }
    return { content: [{ type: 'text', text: `ok ${sum}` }], structuredContent: { sum } };
  },
});

/**
 * The tasklatch side: a PostgresStore (pool of `poolSize`) in a schema of its own, a runtime
 * with its in-process worker (concurrency = tasks at once), tasks admitted with
 * `guard.requestor.create` and awaited with `awaitTaskResult`, the path of the lifecycle scenario.
 */
export async function startTasklatchSide(start: SideStart): Promise<StepsSide> {
  const store = await PostgresStore.open(start.url, { poolSize: start.poolSize });
  const runtime = createRuntime({
    store,
    tools: [stepsTool],
    callersIdentified: true,
    execute: true,
    worker: { concurrency: start.concurrency },
    logger: createLogger('silent'),
  });
  await runtime.start();
  const descriptor = runtime.tools.descriptor(stepsTool);
  const expected = (start.steps * (start.steps - 1)) / 2;
  let created = 0;
  const run = async (auth: string, args: { steps: number; loop?: string }): Promise<unknown> => {
    const request: WireRequest = { method: 'tools/call', params: { name: stepsTool.name, arguments: args, task: { ttl: TTL_MS } } };
    const out = await createTask(runtime.guard, { auth, tool: descriptor, request });
    if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
    const done = await awaitTaskResult(runtime.guard, { auth, taskId: out.record.taskId });
    if (done.decision !== 'RETURN_RESULT' || done.record.status !== 'completed') {
      throw new Error(`expected a completed task, got ${done.decision} ${done.record?.status ?? ''} ${JSON.stringify(done.record?.result ?? null)}`);
    }
    return done.record.result;
  };
  return {
    runTask: async (w) => {
      // Finished tasks stay stored until their ttl: a fresh auth key every 500 tasks stays below
      // the default bound of stored tasks per caller.
      const result = (await run(`steps/${w}/${Math.floor(created++ / 500)}`, { steps: start.steps })) as { structuredContent?: { sum?: number } };
      if (result.structuredContent?.sum !== expected) throw new Error(`task returned ${JSON.stringify(result)}, expected sum ${expected}`);
    },
    runLoop: async (state) => {
      const key = `loop-${created++}`;
      loops.set(key, state);
      try {
        while (!state.stop) await run(`steps/${key}`, { steps: 0, loop: key });
      } finally {
        loops.delete(key);
      }
    },
    close: async () => {
      await runtime.close();
      await store.close();
    },
  };
}
