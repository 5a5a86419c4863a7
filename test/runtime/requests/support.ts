import { z } from 'zod';
import type { InputRequest } from '../../../src/core/input-rules.js';
import type { Fence, TaskRecord } from '../../../src/core/types.js';
import { createLogger } from '../../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { defineTool } from '../../../src/tools/tool.js';
import { createTask } from '../../../src/runtime/requests/create-task.js';

export const ALICE = 'acme/alice';
export const BOB = 'globex/bob';

const noArgs = z.object({});
export const TOOLS = [
  defineTool({
    name: 'report',
    description: 'A task always',
    inputSchema: noArgs,
    execution: { taskSupport: 'required' },
    handler: async () => ({ content: [] }),
  }),
  defineTool({
    name: 'either',
    description: 'Either way',
    inputSchema: noArgs,
    execution: { taskSupport: 'optional' },
    handler: async () => ({ content: [] }),
  }),
  defineTool({ name: 'quick', description: 'Plain only', inputSchema: noArgs, handler: async () => ({ content: [] }) }),
];

/** A runtime over a memory store that runs nothing itself: the tests play the worker. */
export async function memoryRuntime(options: { taskTools?: boolean; callersIdentified?: boolean } = {}): Promise<TaskRuntime> {
  const runtime = createRuntime({
    store: new MemoryStore(),
    tools: TOOLS,
    execute: false,
    sweepIntervalMs: 0,
    inputDeadlineIntervalMs: 0,
    logger: createLogger('silent'),
    callersIdentified: options.callersIdentified ?? true,
    taskTools: options.taskTools ?? false,
  });
  await runtime.start();
  return runtime;
}

/** A working task of `report` for `auth`. */
export async function admitted(runtime: TaskRuntime, auth = ALICE): Promise<TaskRecord> {
  const tool = runtime.tools.descriptor(runtime.tools.get('report')!);
  const out = await createTask(runtime.guard, { auth, tool, request: { method: 'tools/call', params: { name: 'report', arguments: {}, task: {} } } });
  if (out.record === null) throw new Error(`not admitted: ${out.decision}`);
  return out.record;
}

export const CONFIRM: InputRequest = {
  method: 'elicitation/create',
  params: { message: 'Go on?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } },
};

/** Claims `record` as a worker would: the fence of its run. */
export async function claim(runtime: TaskRuntime, record: TaskRecord): Promise<Fence> {
  const [claimed] = await runtime.guard.worker.claim({ owner: 'w-1', leaseMs: 60_000, limit: 1, maxAttempts: 3, abandonedResult: null });
  if (claimed === undefined || claimed.taskId !== record.taskId) throw new Error('not claimed');
  return { taskId: claimed.taskId, authKey: claimed.authKey, owner: 'w-1', version: claimed.version };
}

/** Claims `record` as a worker and asks its requestor `questions`: the task waits `input_required`. */
export async function asking(runtime: TaskRuntime, record: TaskRecord, questions: Record<string, InputRequest>): Promise<void> {
  const fence = await claim(runtime, record);
  const out = await runtime.guard.worker.ask({ fence, askSeq: 1, questions: Object.entries(questions).map(([key, request]) => ({ key, request })) });
  if (out.record?.status !== 'input_required') throw new Error(`not asked: ${JSON.stringify(out)}`);
}

/** The guard's decision events, as `surface decision` lines. */
export function decisionsOf(runtime: TaskRuntime): string[] {
  const seen: string[] = [];
  runtime.guard.context.events.add({ decision: (e) => void seen.push(`${e.surface} ${e.decision}`) });
  return seen;
}
