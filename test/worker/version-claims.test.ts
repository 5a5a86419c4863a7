import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import type { TaskStore } from '../../src/store/types.js';
import { defineTool } from '../../src/tools/tool.js';
import { memoryHarness, postgresHarness } from '../support/stores.js';
import { until } from '../support/until.js';

const AUTH = 'acme/alice';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** One `deploy_demo` per version: its result says which code ran it; `hold` keeps the v1 handler until released. */
function deployDemo(version: string, held?: Promise<void>) {
  return defineTool({
    name: 'deploy_demo',
    description: 'a tool that meets a deploy',
    inputSchema: z.object({ hold: z.boolean().optional() }),
    execution: { taskSupport: 'required' },
    version,
    handler: async (args) => {
      if (args.hold === true) await held;
      return { content: [{ type: 'text', text: version }], structuredContent: { ranOn: version } };
    },
  });
}

async function admit(runtime: TaskRuntime, args: Record<string, unknown> = {}): Promise<string> {
  const created = await createTask(runtime.guard, {
    auth: AUTH,
    tool: { name: 'deploy_demo', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'deploy_demo', arguments: args, task: {} } },
  });
  return created.record!.taskId;
}

const stored = async (store: TaskStore, taskId: string) => (await store.get({ authKey: AUTH, taskId, now: Date.now() })).record!;
const finished = (store: TaskStore, taskId: string) =>
  until(async () => {
    const record = await stored(store, taskId);
    return record.status === 'completed' ? record : undefined;
  });

describe.each([memoryHarness, postgresHarness])('workers of two versions of a tool on one $name store', (harness) => {
  it("leave an old version's task to the live old worker, and hand it to the newest once that worker stops", async () => {
    const [store, other, admitting] = await harness.openMany('version_workers', 3);
    closers.push(async () => {
      for (const s of new Set([store!, other!, admitting!])) await s.close();
    });
    const quiet = pino({ level: 'silent' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const worker = { pollMs: 10, concurrency: 1, versions: { silenceMs: 30_000, renewMs: 10 } };
    const old = createRuntime({ store: store!, tools: [deployDemo('v1', held)], worker, logger: quiet });
    const next = createRuntime({ store: other!, tools: [deployDemo('v2')], worker, logger: quiet });
    // Admissions by processes without workers (serve --no-workers), so every task goes through the outbox.
    const admitV1 = createRuntime({ store: admitting!, tools: [deployDemo('v1')], execute: false, logger: quiet });
    const admitV2 = createRuntime({ store: admitting!, tools: [deployDemo('v2')], execute: false, logger: quiet });
    closers.push(() => Promise.all([old, next, admitV1, admitV2].map((r) => r.close())).then(() => undefined));
    expect([old.worker!.version('deploy_demo'), next.worker!.version('deploy_demo')]).toEqual(['v1', 'v2']);
    await old.start();
    try {
      // The old worker's one slot is taken by a task that waits.
      const holding = await admit(admitV1, { hold: true });
      await until(async () => ((await stored(store!, holding)).leaseOwner !== null ? true : undefined));
      await next.start();
      // An old task, then a new one: the new worker's look that finds the new one walks past the old one first.
      const oldTask = await admit(admitV1);
      const newTask = await admit(admitV2);
      expect((await stored(store!, oldTask)).toolVersion).toBe('v1');
      expect((await finished(store!, newTask)).result).toMatchObject({ structuredContent: { ranOn: 'v2' } });
      // Left as it was for the live v1 worker: not claimed, not touched.
      expect(await stored(store!, oldTask)).toMatchObject({ status: 'working', attempt: 0, leaseOwner: null, version: 1 });
      release();
      expect((await finished(store!, oldTask)).result).toMatchObject({ structuredContent: { ranOn: 'v1' } });
      expect((await finished(store!, holding)).result).toMatchObject({ structuredContent: { ranOn: 'v1' } });

      // The deploy finishes: the v1 worker stops. A v1 task admitted now (a retry, a late caller) goes to the newest code.
      await old.close();
      const late = await admit(admitV1);
      const done = await finished(store!, late);
      expect([done.toolVersion, done.result]).toEqual(['v1', expect.objectContaining({ structuredContent: { ranOn: 'v2' } })]);
    } finally {
      release();
    }
  });
});
