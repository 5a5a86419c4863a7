import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TaskRecord, WireRequest } from '../../src/core/types.js';
import { callTool } from '../../src/runtime/requests/call-tool.js';
import { getTask } from '../../src/runtime/requests/get-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool, type ToolContext } from '../../src/tools/tool.js';
import { endRun, runSpan } from '../../src/trace/run-spans.js';
import { until } from '../support/until.js';

// With an SDK registered by the application (here, in-memory): the spans of a call, its task's
// run and the run's steps, one trace from the caller's traceparent.

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;
const AUTH = 'acme/alice';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const twoSteps = defineTool({
  name: 'two_steps',
  description: 'two steps, then a sleep that has already passed',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async (_args, ctx) => {
    const a = await ctx.step.do('first', async () => 1);
    const b = await ctx.step.do('second', async () => a + 1);
    await ctx.step.sleep('no-wait', 0);
    return { content: [{ type: 'text', text: String(b) }] };
  },
}) as unknown as TaskTool;

const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
  exporter.reset();
});

/** A started runtime of `two_steps` on a memory store (closed after the test), and its task call with `meta`. */
async function callTwoSteps(meta: Record<string, unknown> | undefined, options: { execute?: boolean } = {}) {
  const r = createRuntime({ store: new MemoryStore(), tools: [twoSteps], logger: createLogger('silent'), sweepIntervalMs: 0, ...options });
  runtimes.push(r);
  await r.start();
  const out = await callTool(r, {
    principal: { tenant: 'acme', subject: 'alice' },
    params: meta === undefined ? { name: 'two_steps', arguments: {} } : { name: 'two_steps', arguments: {}, _meta: meta },
    headerKey: null,
    asks: 'accepted',
    clientTakesTasks: true,
    context: () => ({}) as unknown as ToolContext,
  });
  if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
  return { r, out };
}

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

describe('spans with an SDK registered', () => {
  it("a call, its task's run and each step, under the caller's traceparent", async () => {
    const { r, out } = await callTwoSteps({ traceparent: TRACEPARENT });
    const { taskId } = out.record;
    const finished = () => exporter.getFinishedSpans();
    await until(() => (finished().some((s) => s.name === 'run two_steps') ? true : undefined));
    const spans = finished();
    const call = spans.find((s) => s.name === 'tools/call')!;
    const run = spans.find((s) => s.name === 'run two_steps')!;
    expect(call.spanContext().traceId).toBe(TRACE_ID);
    expect(parentOf(call)).toBe(CLIENT_SPAN);
    expect(call.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'tasklatch.decision': 'ACCEPT_TASK', 'tasklatch.task.id': taskId });
    // The stored trace context is the call span's: the run is its child.
    expect((out.record.request as WireRequest).params._meta).toMatchObject({ traceparent: `00-${TRACE_ID}-${call.spanContext().spanId}-01` });
    expect(parentOf(run)).toBe(call.spanContext().spanId);
    expect(run.attributes).toMatchObject({ 'tasklatch.task.id': taskId, 'tasklatch.task.attempt': 1, 'tasklatch.outcome': 'completed' });
    const parts = spans.filter((s) => s.attributes['tasklatch.step.kind'] !== undefined);
    expect(parts.map((s) => [s.name, s.attributes['tasklatch.outcome']])).toEqual([
      ['step first', 'returned'],
      ['step second', 'returned'],
      ['sleep no-wait', 'passed'],
    ]);
    for (const part of parts) expect(parentOf(part)).toBe(run.spanContext().spanId);
    // The run's store round trips are its children (or its steps').
    expect(spans.filter((s) => s.name.startsWith('store ') && s.spanContext().traceId === TRACE_ID).length).toBeGreaterThan(0);

    // A later request is a span of its own, with the task it named.
    await getTask(r, { auth: AUTH, taskId });
    const get = finished().find((s) => s.name === 'tasks/get')!;
    expect(get.attributes).toMatchObject({
      'mcp.method.name': 'tasks/get',
      'tasklatch.task.id': taskId,
      'tasklatch.outcome': 'task',
      'tasklatch.task.status': 'completed',
    });
  });

  it('a later run of a task starts a trace of its own, linked to the stored context', () => {
    const record = {
      taskId: 't-1',
      attempt: 2,
      app: 'default',
      toolName: 'two_steps',
      toolVersion: 'v1',
      request: { method: 'tools/call', params: { _meta: { traceparent: TRACEPARENT } } },
    } as unknown as TaskRecord;
    const later = runSpan(record, 'w-1');
    endRun(later, 'completed');
    const first = runSpan({ ...record, attempt: 1 }, 'w-1');
    endRun(first, 'failed');
    const [second, firstRun] = exporter.getFinishedSpans();
    expect(second!.spanContext().traceId).not.toBe(TRACE_ID);
    expect(second!.parentSpanContext).toBeUndefined();
    expect(second!.links.map((l) => l.context.spanId)).toEqual([CLIENT_SPAN]);
    expect(second!.attributes).toMatchObject({ 'tasklatch.task.attempt': 2, 'tasklatch.worker.id': 'w-1', 'tasklatch.tool.version': 'v1' });
    expect(firstRun!.spanContext().traceId).toBe(TRACE_ID);
    expect(firstRun!.links).toEqual([]);
    expect(firstRun!.status.code).toBe(2);
  });

  it('an event sent to a task: one internal span with the task and the outcome, its store round trips under it', async () => {
    const { r, out: created } = await callTwoSteps(undefined, { execute: false });
    const { taskId } = created.record;
    exporter.reset();
    expect(await r.sendEvent({ taskId, type: 'approved', authKey: AUTH })).toMatchObject({ kind: 'sent', seq: 1 });
    expect(await r.sendEvent({ taskId: 'no-such-task', type: 'approved', authKey: AUTH })).toMatchObject({ kind: 'refused', reason: 'not-found' });
    const sends = exporter.getFinishedSpans().filter((s) => s.name === 'send event');
    expect(sends.map((s) => [s.kind, s.attributes['tasklatch.task.id'], s.attributes['tasklatch.outcome'], s.attributes['mcp.method.name']])).toEqual([
      [0, taskId, 'sent', undefined],
      [0, 'no-such-task', 'refused', undefined],
    ]);
    const stores = exporter.getFinishedSpans().filter((s) => s.name.startsWith('store ') && parentOf(s) === sends[0]!.spanContext().spanId);
    expect(stores.length).toBeGreaterThan(0);
  });
});
