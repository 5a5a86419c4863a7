import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { z } from 'zod';
import { serveOperatorEndpoints } from '../../src/cli/operator-endpoints.js';
import type { TaskRecord } from '../../src/core/types.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import type { TaskStore } from '../../src/store/types.js';
import { defineTool, type TaskTool, type ToolResult } from '../../src/tools/tool.js';
import { record } from '../support/records.js';
import { until } from '../support/until.js';

/** Debian's Chromium; the browser tests skip (saying why) where it is not installed. */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const SKIP_MESSAGE = `skipped: no Chromium at ${CHROMIUM} (apt-get install chromium); the console's HTML and escaping are still tested by console-html.test.ts`;

/** Where the browser tests write their screenshots (gitignored). */
export const ARTIFACTS = new URL('../../test-results/console/', import.meta.url);

export async function artifactPath(name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  return new URL(name, ARTIFACTS).pathname;
}

/** Text that runs a script or sets a window flag wherever it is not escaped. */
export const HOSTILE = {
  script: '<script>window.__pwned=1</script>',
  img: '"><img src=x onerror="window.__pwned=2;alert(2)">',
  svg: "'><svg onload=window.__pwned=3>",
} as const;

const text = (value: string): ToolResult => ({ content: [{ type: 'text', text: value }] });

function tool(name: string, handler: TaskTool['handler']): TaskTool {
  return defineTool({ name, description: name, inputSchema: z.object({}).passthrough(), execution: { taskSupport: 'required' }, handler });
}

/** Three steps in order, then a result. */
const stepper = tool('stepper', async (_args, ctx) => {
  const a = await ctx.step.do('fetch-orders', async () => 3);
  const b = await ctx.step.do('transform-rows', async () => a * 2);
  await ctx.step.do('upload-report', async () => ({ rows: b }));
  return text(`uploaded ${b} rows`);
});

/** A result that would run a script if it were not escaped. */
const echo = tool('echo_hostile', async () => text(`${HOSTILE.script}${HOSTILE.img}${HOSTILE.svg}`));

/** A step, then a wait for `ci.finished`, then a step: running until the event comes (or a cancel). */
const waiter = tool('waiter', async (_args, ctx) => {
  await ctx.step.do('prepare', async () => 'ready');
  const build = await ctx.step.waitForEvent('build', { type: 'ci.finished', timeoutMs: 600_000 });
  await ctx.step.do('deploy', async () => build);
  return text(`deployed ${JSON.stringify(build)}`);
});

export interface ConsoleWorld {
  runtime: TaskRuntime;
  store: TaskStore;
  url: string;
  start(toolName: string, auth?: string): Promise<string>;
  record(taskId: string): Promise<TaskRecord>;
  settled(taskId: string, status: string): Promise<TaskRecord>;
  /** Until the task's journal holds a waiting event wait. */
  waiting(taskId: string): Promise<void>;
  close(): Promise<void>;
}

/** A runtime with the console's tools on `store`, its operator listener on a free port. */
export async function consoleWorld(store: TaskStore, token?: string): Promise<ConsoleWorld> {
  const runtime = createRuntime({ store, tools: [stepper, echo, waiter], logger: createLogger('silent'), sweepIntervalMs: 0, worker: { pollMs: 50 } });
  await runtime.start();
  const server = await serveOperatorEndpoints(runtime, '127.0.0.1:0', token === undefined ? {} : { metricsToken: token });
  const read = async (taskId: string) => (await store.inspectTask({ taskId }))?.record ?? null;
  return {
    runtime,
    store,
    url: server.url,
    start: async (toolName, auth = 'acme/alice') => {
      const out = await createTask(runtime.guard, {
        auth,
        tool: { name: toolName, execution: { taskSupport: 'required' } },
        request: { method: 'tools/call', params: { name: toolName, arguments: {}, task: { ttl: 600_000 } } },
      });
      return out.record!.taskId;
    },
    record: async (taskId) => (await read(taskId))!,
    settled: (taskId, status) => until(async () => ((await read(taskId))?.status === status ? (await read(taskId))! : undefined)),
    waiting: async (taskId) => {
      await until(async () => ((await store.taskSteps({ taskId })).some((s) => s.kind === 'event' && s.status === 'waiting') ? true : undefined));
    },
    close: async () => {
      await server.close();
      await runtime.close(100);
      await store.close();
    },
  };
}

/** Records a store holds from elsewhere: hostile ids, tools, tenants and results, and a failed task. */
export function hostileRecords(now: number): TaskRecord[] {
  const base = { createdAt: now - 5000, lastUpdatedAt: now - 4000, ttl: 3_600_000, expiresAt: now + 3_600_000 };
  return [
    record({
      ...base,
      taskId: `hostile-${HOSTILE.img}`,
      authKey: `${HOSTILE.script}/mallory`,
      toolName: HOSTILE.script,
      status: 'completed',
      result: { content: [{ type: 'text', text: `${HOSTILE.script}${HOSTILE.img}` }] },
    }),
    record({
      ...base,
      taskId: 'failed-import',
      authKey: 'globex/bob',
      toolName: 'import_csv',
      status: 'failed',
      result: { content: [{ type: 'text', text: 'row 17: bad date' }], isError: true },
    }),
  ];
}
