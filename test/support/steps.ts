import { z } from 'zod';
import type { TaskRecord } from '../../src/core/types.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import type { TaskLimits } from '../../src/service/limits.js';
import type { TaskStore } from '../../src/store/types.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { defineTool, type TaskTool, type ToolContext, type ToolResult } from '../../src/tools/tool.js';
import { Worker, type WorkerOptions } from '../../src/worker/worker.js';
import { ALL_CAPS } from './records.js';
import type { StoreHarness } from './stores.js';
import { until } from './until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

export const AUTH = 'acme/alice';
export const ELICIT = { elicitation: {} };

/** A task tool named `name` whose handler is `handler`, given its arguments and context. */
export function stepTool(name: string, handler: (args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolResult>): TaskTool {
  return defineTool({
    name,
    description: `${name}: a tool with durable steps`,
    inputSchema: z.object({}).passthrough(),
    execution: { taskSupport: 'required' },
    handler: (args, ctx) => handler(args, ctx),
  });
}

export const text = (value: string): ToolResult => ({ content: [{ type: 'text', text: value }] });

/** One store (or several handles on one) with a service each, workers, and the reads a step test makes. */
export interface StepWorld {
  stores: TaskStore[];
  services: Guard[];
  svc: Guard;
  store: TaskStore;
  worker(tool: TaskTool | TaskTool[], options?: WorkerOptions & { on?: Guard }): Worker;
  admit(tool: string, capabilities?: Record<string, unknown>, on?: Guard): Promise<string>;
  record(taskId: string): Promise<TaskRecord | null>;
  /** Waits until the task is in `status` (any terminal status when not given) and returns it. */
  settled(taskId: string, status?: string, ms?: number): Promise<TaskRecord>;
  close(): Promise<void>;
}

/** A world on a fresh store of `harness` (`count` handles, each with its own service). */
export async function stepWorld(harness: StoreHarness, label: string, options: { count?: number; limits?: Partial<TaskLimits> } = {}): Promise<StepWorld> {
  const stores = await harness.openMany(`steps_${label}`, options.count ?? 1);
  const services = stores.map((store) => openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100, ...options.limits } }));
  const workers: Worker[] = [];
  const svc = services[0]!;
  const world: StepWorld = {
    stores,
    services,
    svc,
    store: stores[0]!,
    worker: (tool, { on, ...workerOptions } = {}) => {
      const w = new Worker((on ?? svc).worker, new ToolRegistry(Array.isArray(tool) ? tool : [tool]), { pollMs: 50, leaseMs: 2000, ...workerOptions });
      w.start();
      workers.push(w);
      return w;
    },
    admit: async (tool, capabilities = ELICIT, on = svc) => {
      const out = await createTask(on, {
        auth: AUTH,
        tool: { name: tool, execution: { taskSupport: 'required' } },
        request: {
          method: 'tools/call',
          params: { name: tool, arguments: {}, task: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': capabilities } },
        },
      });
      return out.record!.taskId;
    },
    record: async (taskId) => (await svc.worker.lookup({ auth: AUTH, taskId })).record,
    settled: (taskId, status, ms = 30_000) =>
      until(async () => {
        const r = (await svc.worker.lookup({ auth: AUTH, taskId })).record;
        if (r === null) return undefined;
        const done = status === undefined ? ['completed', 'failed', 'cancelled'].includes(r.status) : r.status === status;
        return done ? r : undefined;
      }, ms),
    close: async () => {
      await Promise.all(workers.map((w) => w.stop(100)));
      for (const store of new Set(stores)) await store.close();
    },
  };
  return world;
}

/** The text of a stored tool result (the first content block). */
export function resultText(record: TaskRecord | null): string {
  const result = record?.result as { content?: Array<{ text?: string }>; error?: { message: string } } | null | undefined;
  return result?.content?.[0]?.text ?? result?.error?.message ?? '';
}
