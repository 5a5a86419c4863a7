import { afterEach, describe, expect, it } from 'vitest';
import { TaskMetrics } from '../../src/metrics/task-metrics.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { stepTool, text } from '../support/steps.js';
import { until } from '../support/until.js';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe('worker version metrics', () => {
  it('count the live workers of each app, tool and version, and drop a version once its last worker stops', async () => {
    const store = new MemoryStore();
    const tool = (version: string) =>
      Object.assign(
        stepTool('build', async () => text(version)),
        { version },
      );
    const make = (version: string) =>
      createRuntime({ store, tools: [tool(version)], logger: createLogger('silent'), sweepIntervalMs: 0, worker: { pollMs: 50 } });
    const [a, b, c] = [make('v1'), make('v1'), make('v2')];
    const metrics = new TaskMetrics(a.guard.context, { storeReadIntervalMs: 0, processMetrics: false });
    closers.push(
      () => Promise.all([a.close(50), b.close(50), c.close(50)]).then(() => undefined),
      () => metrics.close(),
    );
    // Each worker announces as it starts.
    await Promise.all([a.start(), b.start(), c.start()]);
    await until(async () => ((await store.liveVersions({ now: Date.now(), silenceMs: 30_000 })).length === 3 ? true : undefined));
    const body = (await metrics.render()).body;
    expect(body).toMatch(/^tasklatch_worker_versions\{app="default",tool="build",version="v1"\} 2$/m);
    expect(body).toMatch(/^tasklatch_worker_versions\{app="default",tool="build",version="v2"\} 1$/m);
    await c.close(50);
    const after = (await metrics.render()).body;
    expect(after).toMatch(/^tasklatch_worker_versions\{app="default",tool="build",version="v1"\} 2$/m);
    expect(after).not.toMatch(/version="v2"/);
  });
});
