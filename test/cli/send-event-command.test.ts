import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { openStore } from '../../src/store/open-store.js';
import { defineTool } from '../../src/tools/tool.js';
import { runMain } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { until } from '../support/until.js';

// `tasklatch tasks send-event` from another "process" (the CLI's own store connection) reaches a
// task a runtime runs: the waiting task resumes with the payload; refusals say why.

const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const waiter = defineTool({
  name: 'waiter',
  description: 'waits for an approval',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async (_args, ctx) => {
    const approval = await ctx.step.waitForEvent('approval', { type: 'approved', timeoutMs: 600_000 });
    return { content: [{ type: 'text', text: JSON.stringify(approval) }] };
  },
});

const STORES = [
  { name: 'sqlite', url: async () => `sqlite:${join(await mkdtemp(join(tmpdir(), 'tasklatch-events-')), 'tasks.db')}` },
  { name: 'postgres', url: () => freshPostgresUrl('cli_send_event') },
];

describe.each(STORES)('tasklatch tasks send-event on $name', ({ url: makeUrl }) => {
  it('wakes a waiting task with the payload, as the operator or as its principal only, and says why a send is refused', async () => {
    const url = await makeUrl();
    const store = await openStore(url);
    // A long poll: only the send's notification (through the store) wakes the task in time.
    const runtime: TaskRuntime = createRuntime({ store, tools: [waiter], logger: createLogger('silent'), worker: { pollMs: 60_000 } });
    await runtime.start();
    stops.push(
      () => store.close(),
      () => runtime.close(100),
    );
    const admit = async () =>
      (
        await createTask(runtime.guard, {
          auth: 'acme/alice',
          tool: { name: 'waiter', execution: { taskSupport: 'required' } },
          request: { method: 'tools/call', params: { name: 'waiter', arguments: {}, task: { ttl: 600_000 } } },
        })
      ).record!.taskId;
    const lookup = async (taskId: string) => (await runtime.guard.worker.lookup({ auth: 'acme/alice', taskId })).record;
    const waiting = async (taskId: string) =>
      until(async () => {
        const r = await lookup(taskId);
        return r?.statusMessage?.startsWith('waiting') === true && r.leaseOwner === null ? r : undefined;
      });
    const first = await admit();
    await waiting(first);
    const wrong = await runMain(['tasks', 'send-event', first, 'approved', '--data', '{"by":"mallory"}', '--as', 'beta/bob', '--store', url]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('no such task (not-found)');
    const sent = await runMain(['tasks', 'send-event', first, 'approved', '--data', '{"by":"carol"}', '--store', url, '--json']);
    expect(sent.stderr).toBe('');
    expect(JSON.parse(sent.stdout)).toMatchObject({ taskId: first, type: 'approved', seq: 1, woke: true });
    const done = await until(async () => {
      const r = await lookup(first);
      return r?.status === 'completed' ? r : undefined;
    });
    expect((done.result as { content: Array<{ text: string }> }).content[0]!.text).toBe('{"by":"carol"}');
    const late = await runMain(['tasks', 'send-event', first, 'approved', '--store', url]);
    expect(late.stderr).toContain('the task has finished (terminal)');
    // As its own principal, in text.
    const second = await admit();
    await waiting(second);
    const own = await runMain(['tasks', 'send-event', second, 'approved', '--data', '"yes"', '--as', 'acme/alice', '--store', url]);
    expect(own.stdout).toContain(`sent "approved" to ${second} as event 1 (its wait is due now)`);
    await until(async () => ((await lookup(second))?.status === 'completed' ? true : undefined));
    const bad = await runMain(['tasks', 'send-event', second, 'approved', '--data', '{nope', '--store', url]);
    expect(bad.stderr).toContain('--data is JSON');
    const trail = (await store.auditTrail({ taskId: first })).filter((l) => l.surface === 'event');
    expect(trail.map((l) => [l.decision, l.correlationId.startsWith('operator:')])).toEqual([
      ['BLOCK_AUTH', true],
      ['APPLY_EVENT', true],
      ['BLOCK_TERMINAL_REWRITE', true],
    ]);
  });
});
