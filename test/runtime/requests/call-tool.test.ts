import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { WireRequest } from '../../../src/core/types.js';
import type { DecisionEvent } from '../../../src/service/task-events.js';
import { callTool, type ToolCall } from '../../../src/runtime/requests/call-tool.js';
import { createLogger } from '../../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { InputNeeded } from '../../../src/tools/asking.js';
import { META_KEYS } from '../../../src/core/meta-keys.js';
import { defineTool, type TaskTool, type ToolContext } from '../../../src/tools/tool.js';

const ALICE = { tenant: 'acme', subject: 'alice' };
const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
});

/** How often each tool's schema looked at its arguments. */
let parses = 0;
let prepared = 0;

const counted = z.object({
  n: z.number().refine(() => {
    parses++;
    return true;
  }),
});

/** Optional: a task for n ≥ 10, asked a question by `prepare` when n is 13. */
const sized = defineTool({
  name: 'sized',
  description: 'a task for large n',
  inputSchema: counted,
  execution: { taskSupport: 'optional' },
  runsAsTask: (args) => args.n >= 10,
  prepare: async (args, ctx) => {
    prepared++;
    if (args.n === 13)
      await ctx.ask({ sure: { method: 'elicitation/create', params: { message: 'sure?', requestedSchema: { type: 'object', properties: {} } } } });
    return { planned: args.n * 2 };
  },
  handler: async (args) => ({ content: [{ type: 'text', text: String(args.n) }] }),
}) as unknown as TaskTool;

const required = defineTool({
  name: 'required',
  description: 'always a task',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async () => ({ content: [] }),
}) as unknown as TaskTool;

function start(): { runtime: TaskRuntime; decisions: DecisionEvent[] } {
  const runtime = createRuntime({ store: new MemoryStore(), tools: [sized, required], execute: false, logger: createLogger('silent'), sweepIntervalMs: 0 });
  runtimes.push(runtime);
  const decisions: DecisionEvent[] = [];
  runtime.guard.context.events.add({ decision: (e) => void decisions.push(e) });
  parses = 0;
  prepared = 0;
  return { runtime, decisions };
}

/** A context that asks nothing of anyone: a question ends the call as `input`. */
const quietContext = (): ToolContext =>
  ({
    taskId: null,
    principal: ALICE,
    signal: new AbortController().signal,
    idempotencyKey: 'call:test',
    clientCapabilities: null,
    reportStatus: async () => undefined,
    reportProgress: async () => undefined,
    checkpoint: async () => undefined,
    ask: async (requests: Record<string, unknown>) => Promise.reject(new InputNeeded(requests as never, {})),
  }) as unknown as ToolContext;

const call = (params: Record<string, unknown>, over: Partial<ToolCall> = {}): ToolCall => ({
  principal: ALICE,
  params,
  headerKey: null,
  asks: 'accepted',
  clientTakesTasks: true,
  context: quietContext,
  ...over,
});

describe('TaskRuntime.callTool', () => {
  it('parses the arguments once for a plain call and once for a task call, prepare included', async () => {
    const { runtime, decisions } = start();
    const plain = await callTool(runtime, call({ name: 'sized', arguments: { n: 1 } }));
    expect(plain).toMatchObject({ kind: 'result', decision: 'ACCEPT_NORMAL', result: { content: [{ text: '1' }] } });
    expect(parses).toBe(1);
    expect(prepared).toBe(0);

    const task = await callTool(runtime, call({ name: 'sized', arguments: { n: 10 } }));
    expect(task).toMatchObject({ kind: 'task', decision: 'ACCEPT_TASK', followUp: false });
    expect(parses).toBe(2);
    expect(prepared).toBe(1);
    expect(decisions.map((d) => d.decision)).toEqual(['ACCEPT_NORMAL', 'ACCEPT_TASK']);
  });

  it('stores a task the server chose without a params.task, with what prepare returned', async () => {
    const { runtime } = start();
    const out = await callTool(runtime, call({ name: 'sized', arguments: { n: 11 }, requestState: 'x' }, { stored: { name: 'sized', arguments: { n: 11 } } }));
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    const { params } = out.record.request as WireRequest;
    expect(params).not.toHaveProperty('task');
    expect(params).not.toHaveProperty('requestState');
    expect(params._meta).toEqual({ [META_KEYS.prepared]: { planned: 22 } });
    // The default ttl: nothing asked one.
    expect(out.record.ttl).toBe(runtime.guard.context.limits.defaultTtl);
  });

  it('keeps a 2025-11-25 params.task and its ttl, and replays by key across both ways of asking', async () => {
    const { runtime } = start();
    const meta = { 'io.tasklatch/idempotency-key': 'k' };
    const first = await callTool(runtime, call({ name: 'required', arguments: {}, task: { ttl: 5000 }, _meta: meta }, { asks: 'requested' }));
    const again = await callTool(runtime, call({ name: 'required', arguments: {}, _meta: meta }));
    if (first.kind !== 'task' || again.kind !== 'task') throw new Error('expected tasks');
    expect((first.record.request as WireRequest).params.task).toEqual({ ttl: 5000 });
    expect(first.record.ttl).toBe(5000);
    expect(again).toMatchObject({ decision: 'REPLAY_TASK', record: { taskId: first.record.taskId } });
  });

  it('answers a question of prepare as input, storing nothing and auditing nothing', async () => {
    const { runtime, decisions } = start();
    const out = await callTool(runtime, call({ name: 'sized', arguments: { n: 13 } }));
    expect(out.kind).toBe('input');
    expect(decisions).toEqual([]);
    expect(await runtime.guard.context.store.pendingDispatch()).toBe(0);
  });

  it('refuses a required tool without tasks, audited, and makes no context for it', async () => {
    const { runtime, decisions } = start();
    let contexts = 0;
    const out = await callTool(
      runtime,
      call({ name: 'required', arguments: {} }, { asks: 'none', clientTakesTasks: false, context: () => (contexts++, quietContext()) }),
    );
    expect(out).toEqual({ kind: 'refused', decision: 'BLOCK_TASK_REQUIRED', tool: 'required', message: 'Tool required must be called as a task' });
    expect(contexts).toBe(0);
    expect(decisions).toMatchObject([{ surface: 'create', decision: 'BLOCK_TASK_REQUIRED', authKey: 'acme/alice', tool: 'required', taskId: null }]);
  });

  it('refuses input past the bounds, an unknown tool and bad task arguments before any decision', async () => {
    const { runtime, decisions } = start();
    expect(await callTool(runtime, call({ name: 'nope' }))).toEqual({ kind: 'invalid', message: 'Unknown tool: nope' });
    expect(await callTool(runtime, call({ name: 'sized', arguments: { n: 'x' } }))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('Invalid arguments for tool sized') as unknown,
    });
    expect(await callTool(runtime, call({ name: 'sized', arguments: { n: 1 } }, { headerKey: '' }))).toEqual({
      kind: 'invalid',
      message: 'the Idempotency-Key header must have 1 to 256 characters',
    });
    expect(await callTool(runtime, call({ name: 'sized', arguments: { n: 12 }, _meta: { 'io.tasklatch/idempotency-key': 'a' } }, { headerKey: 'b' }))).toEqual({
      kind: 'invalid',
      message: 'the Idempotency-Key header and _meta idempotency key differ',
    });
    expect(decisions).toEqual([]);
    expect(prepared).toBe(0);
  });
});
