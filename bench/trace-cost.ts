import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { callTool, type ToolCall } from '../src/runtime/requests/call-tool.js';
import { getTask } from '../src/runtime/requests/get-task.js';
import { createLogger } from '../src/runtime/log.js';
import { createRuntime } from '../src/runtime/task-runtime.js';
import { MemoryStore } from '../src/store/memory/memory-store.js';
import { defineTool, type TaskTool, type ToolContext } from '../src/tools/tool.js';

/**
 * `node dist/bench/bench/trace-cost.js [ops] [rounds]`: in-process `tasks/get` and `tools/call`
 * admissions on the memory store, one at a time, no SDK registered: what the request layer
 * costs per call (µs, the median of `rounds`), so the no-op tracing path can be compared with a
 * build without it. TRACE_COST_SDK=1 registers an in-memory SDK first (every span recorded).
 */
const ops = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 7);

const tool = defineTool({
  name: 'bench',
  description: 'a task',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async () => ({ content: [] }),
}) as unknown as TaskTool;

async function main(): Promise<void> {
  if (process.env.TRACE_COST_SDK === '1') {
    const node = await import('@opentelemetry/sdk-trace-node');
    const exporter = new node.InMemorySpanExporter();
    new node.NodeTracerProvider({ spanProcessors: [new node.SimpleSpanProcessor(exporter)] }).register();
    setInterval(() => exporter.reset(), 100).unref();
  }
  const runtime = createRuntime({
    store: new MemoryStore(),
    tools: [tool],
    execute: false,
    logger: createLogger('silent'),
    sweepIntervalMs: 0,
    limits: { maxActiveTasks: null, maxStoredTasks: null },
  });
  let n = 0;
  const call = (): ToolCall => ({
    principal: { tenant: 'bench', subject: `s${n++}` },
    params: { name: 'bench', arguments: {} },
    headerKey: null,
    asks: 'accepted',
    clientTakesTasks: true,
    context: () => ({}) as unknown as ToolContext,
  });
  const first = await callTool(runtime, call());
  if (first.kind !== 'task') throw new Error(`not admitted: ${first.kind}`);
  const { taskId, authKey } = first.record;
  const get: number[] = [];
  const admit: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let t = performance.now();
    for (let i = 0; i < ops; i++) await getTask(runtime, { auth: authKey, taskId });
    get.push(((performance.now() - t) * 1000) / ops);
    t = performance.now();
    for (let i = 0; i < ops / 4; i++) await callTool(runtime, call());
    admit.push(((performance.now() - t) * 1000) / (ops / 4));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(2);
  console.log(JSON.stringify({ sdk: process.env.TRACE_COST_SDK === '1', getUs: median(get), admitUs: median(admit), ops, rounds }));
  await runtime.close(50);
}

void main();
