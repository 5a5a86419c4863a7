import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime } from '../../src/runtime/task-runtime.js';
import { openStore } from '../../src/store/open-store.js';
import { defineTool } from '../../src/tools/tool.js';
import { runMain } from '../support/cli.js';
import { until } from '../support/until.js';

// `tasklatch tasks ls --sleeping` and `--waiting-event` find the tasks a running runtime has put
// to sleep or to wait for an event, from the CLI's own store connection.

const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const tool = (name: string, handler: Parameters<typeof defineTool>[0]['handler']) =>
  defineTool({ name, description: name, inputSchema: z.object({}), execution: { taskSupport: 'required' }, handler });

const napper = tool('napper', async (_args, ctx) => {
  await ctx.step.sleep('nap', 600_000);
  return { content: [] };
});
const waiter = tool('waiter', async (_args, ctx) => {
  await ctx.step.waitForEvent('approval', { type: 'approved', timeoutMs: 600_000 });
  return { content: [] };
});
const quick = tool('quick', async () => ({ content: [] }));

describe('tasklatch tasks ls --sleeping / --waiting-event', () => {
  it('lists only the tasks asleep, or only those waiting for an event, and refuses the flags elsewhere', async () => {
    const url = `sqlite:${join(await mkdtemp(join(tmpdir(), 'tasklatch-ls-waits-')), 'tasks.db')}`;
    const store = await openStore(url);
    const runtime = createRuntime({ store, tools: [napper, waiter, quick], logger: createLogger('silent') });
    await runtime.start();
    stops.push(
      () => store.close(),
      () => runtime.close(100),
    );
    const admit = async (name: string) =>
      (
        await createTask(runtime.guard, {
          auth: 'acme/alice',
          tool: { name, execution: { taskSupport: 'required' } },
          request: { method: 'tools/call', params: { name, arguments: {}, task: { ttl: 600_000 } } },
        })
      ).record!.taskId;
    const [asleep, waiting, done] = [await admit('napper'), await admit('waiter'), await admit('quick')];
    // Each has let go of its lease: asleep, waiting, or finished.
    await until(async () => {
      const records = await Promise.all(
        [asleep, waiting, done].map(async (taskId) => (await runtime.guard.worker.lookup({ auth: 'acme/alice', taskId })).record),
      );
      return records.every((r) => r !== null && r.leaseOwner === null && (r.status === 'completed' || r.statusMessage !== null)) ? true : undefined;
    });
    const ls = async (...flags: string[]) => {
      const run = await runMain(['tasks', 'ls', '--store', url, '--json', ...flags]);
      expect(run.stderr).toBe('');
      return (JSON.parse(run.stdout) as { tasks: Array<{ taskId: string }> }).tasks.map((t) => t.taskId);
    };
    expect(await ls('--sleeping')).toEqual([asleep]);
    expect(await ls('--waiting-event')).toEqual([waiting]);
    expect(await ls('--sleeping', '--tool', 'waiter')).toEqual([]);
    expect((await ls()).sort()).toEqual([asleep, waiting, done].sort());
    const misplaced = await runMain(['tasks', 'stats', '--store', url, '--sleeping']);
    expect(misplaced.code).not.toBe(0);
    expect(misplaced.stderr).toContain('--sleeping');
  });
});
