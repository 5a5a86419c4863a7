import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveOperatorEndpoints } from '../../src/cli/operator-endpoints.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool } from '../../src/tools/tool.js';
import { until } from '../support/until.js';

// `POST /events` on the operator listener: behind its token, an operator's send into any task,
// 202 with the event's number, 4xx with the reason.

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const waiter = defineTool({
  name: 'waiter',
  description: 'waits for a build',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async (_args, ctx) => {
    const build = await ctx.step.waitForEvent('build', { type: 'ci.finished', timeoutMs: 600_000 });
    return { content: [{ type: 'text', text: JSON.stringify(build) }] };
  },
});

async function started(token: string | undefined) {
  const runtime = createRuntime({ store: new MemoryStore(), tools: [waiter], logger: createLogger('silent'), sweepIntervalMs: 0, worker: { pollMs: 60_000 } });
  await runtime.start();
  const server = await serveOperatorEndpoints(runtime, '127.0.0.1:0', token === undefined ? {} : { metricsToken: token });
  stops.push(
    () => runtime.close(100),
    () => server.close(),
  );
  const taskId = (
    await createTask(runtime.guard, {
      auth: 'acme/alice',
      tool: { name: 'waiter', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'waiter', arguments: {}, task: { ttl: 600_000 } } },
    })
  ).record!.taskId;
  const lookup = async () => (await runtime.guard.worker.lookup({ auth: 'acme/alice', taskId })).record;
  await until(async () => ((await lookup())?.statusMessage?.startsWith('waiting') === true ? true : undefined));
  const post = (body: unknown, bearer: string | null | undefined = token) =>
    fetch(`${server.url}/events`, {
      method: 'POST',
      headers: bearer == null ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  return { taskId, lookup, post, url: server.url };
}

describe('POST /events on the operator listener', () => {
  it('sends an event into the waiting task with the token (202), and refuses without it or with a bad request', async () => {
    const { taskId, lookup, post } = await started('op-secret');
    expect((await post({ taskId, type: 'ci.finished', data: { ok: true } }, 'wrong')).status).toBe(401);
    expect((await post({ taskId, type: 'ci.finished' }, null)).status).toBe(401);
    expect((await post('{nope')).status).toBe(400);
    expect((await post({ taskId })).status).toBe(400);
    expect((await post({ taskId: 'nope', type: 'ci.finished' })).status).toBe(404);
    const sent = await post({ taskId, type: 'ci.finished', data: { ok: true, run: 17 } });
    expect(sent.status).toBe(202);
    expect(await sent.json()).toMatchObject({ kind: 'sent', taskId, seq: 1, woke: true });
    const done = await until(async () => {
      const r = await lookup();
      return r?.status === 'completed' ? r : undefined;
    });
    expect((done.result as { content: Array<{ text: string }> }).content[0]!.text).toBe('{"ok":true,"run":17}');
    const late = await post({ taskId, type: 'ci.finished' });
    expect([late.status, ((await late.json()) as { reason: string }).reason]).toEqual([409, 'terminal']);
  });

  it('is off without a token: 403 saying which token it needs', async () => {
    const { taskId, post, url } = await started(undefined);
    const refused = await post({ taskId, type: 'ci.finished' });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toContain('operator token');
    expect((await fetch(`${url}/events`)).status).toBe(405);
  });
});
