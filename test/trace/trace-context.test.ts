import { readFileSync } from 'node:fs';
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { WireRequest } from '../../src/core/types.js';
import { callTool, type ToolCall } from '../../src/runtime/requests/call-tool.js';
import { getTask } from '../../src/runtime/requests/get-task.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool, type ToolContext } from '../../src/tools/tool.js';
import { remoteParent, stampTraceContext, storedParent, traceCarrierOf, withCheckedTrace } from '../../src/trace/trace-context.js';
import { startSpan, TRACER_VERSION } from '../../src/trace/tracer.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const VALID = `00-${TRACE_ID}-${SPAN_ID}-01`;

/** traceparents the propagation ignores: never an error, never a parent. */
const MALFORMED: unknown[] = [
  'garbage',
  '',
  `00-${'0'.repeat(32)}-${SPAN_ID}-01`,
  `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
  `ff-${TRACE_ID}-${SPAN_ID}-01`,
  `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`,
  `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`,
  `00-${TRACE_ID}-${SPAN_ID}`,
  `01-${TRACE_ID}-${SPAN_ID}-01-${'x'.repeat(200)}`,
  42,
  null,
  { traceparent: VALID },
  [VALID],
];

describe('remoteParent', () => {
  it('reads a well-formed traceparent as a remote parent, with its tracestate', () => {
    const ctx = remoteParent({ traceparent: VALID, tracestate: 'vendor=a,other=b' });
    const parent = ctx === null ? undefined : trace.getSpanContext(ctx);
    expect(parent).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true });
    expect(parent?.traceState?.get('vendor')).toBe('a');
  });

  it.each(MALFORMED.map((value) => [value]))('ignores the traceparent %j', (value) => {
    expect(remoteParent({ traceparent: value, tracestate: 'vendor=a' })).toBeNull();
  });

  it('drops a tracestate that is too long or not a string, and keeps the parent', () => {
    for (const tracestate of ['v=' + 'a'.repeat(600), 7, { v: 'a' }]) {
      const ctx = remoteParent({ traceparent: VALID, tracestate });
      expect(ctx === null ? undefined : trace.getSpanContext(ctx)?.traceState).toBeUndefined();
      expect(ctx === null ? undefined : trace.getSpanContext(ctx)?.spanId).toBe(SPAN_ID);
    }
  });

  it('writes back what it read (the stored form)', () => {
    expect(traceCarrierOf(remoteParent({ traceparent: VALID, tracestate: 'vendor=a' })!)).toEqual({ traceparent: VALID, tracestate: 'vendor=a' });
    expect(traceCarrierOf(ROOT_CONTEXT)).toBeNull();
  });

  it('reads a stored request only for a well-formed one', () => {
    expect(storedParent({ method: 'tools/call', params: { _meta: { traceparent: VALID } } })).not.toBeNull();
    expect(storedParent({ method: 'tools/call', params: { _meta: { traceparent: 'nope' } } })).toBeNull();
    expect(storedParent({ method: 'tools/call', params: {} })).toBeNull();
    expect(storedParent(null)).toBeNull();
  });
});

describe('withCheckedTrace', () => {
  it('keeps a request without trace context as it is, and checks one with', () => {
    const plain: WireRequest = { method: 'tools/call', params: { name: 't', _meta: { other: 1 } } };
    expect(withCheckedTrace(plain)).toBe(plain);
    const sent: WireRequest = { method: 'tools/call', params: { name: 't', _meta: { traceparent: 'nope', tracestate: 'a=b' } } };
    expect(withCheckedTrace(sent).params._meta).toEqual({});
    expect(sent.params._meta).toEqual({ traceparent: 'nope', tracestate: 'a=b' });
    const good: WireRequest = { method: 'tools/call', params: { name: 't', _meta: { traceparent: VALID, tracestate: 'a=b' } } };
    expect(withCheckedTrace(good).params._meta).toEqual({ traceparent: VALID, tracestate: 'a=b' });
  });
});

describe('stampTraceContext', () => {
  it("replaces the client's entries with the admission's, or removes them, keeping the rest of _meta", () => {
    const stored: WireRequest = { method: 'tools/call', params: { name: 't', _meta: { traceparent: 'nope', tracestate: 'x', other: 1 } } };
    stampTraceContext(stored, { traceparent: VALID });
    expect(stored.params._meta).toEqual({ traceparent: VALID, other: 1 });
    stampTraceContext(stored, null);
    expect(stored.params._meta).toEqual({ other: 1 });
    const bare: WireRequest = { method: 'tools/call', params: { name: 't' } };
    stampTraceContext(bare, null);
    expect(bare.params).toEqual({ name: 't' });
  });
});

const required = defineTool({
  name: 'required',
  description: 'always a task',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async () => ({ content: [] }),
}) as unknown as TaskTool;

const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
});

function runtime(): TaskRuntime {
  const r = createRuntime({ store: new MemoryStore(), tools: [required], execute: false, logger: createLogger('silent'), sweepIntervalMs: 0 });
  runtimes.push(r);
  return r;
}

const call = (meta: Record<string, unknown> | undefined, traceHeaders?: ToolCall['traceHeaders']): ToolCall => ({
  principal: { tenant: 'acme', subject: 'alice' },
  params: { name: 'required', arguments: {}, ...(meta === undefined ? {} : { _meta: meta }) },
  headerKey: null,
  ...(traceHeaders === undefined ? {} : { traceHeaders }),
  asks: 'accepted',
  clientTakesTasks: true,
  context: () => ({}) as unknown as ToolContext,
});

async function storedMeta(meta: Record<string, unknown> | undefined, traceHeaders?: ToolCall['traceHeaders']): Promise<Record<string, unknown> | undefined> {
  const out = await callTool(runtime(), call(meta, traceHeaders));
  if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
  return (out.record.request as WireRequest).params._meta as Record<string, unknown> | undefined;
}

describe('admission without an SDK', () => {
  it('records no span and stores the requestor’s trace context as sent', async () => {
    expect(startSpan('probe', SpanKind.INTERNAL).isRecording()).toBe(false);
    expect(await storedMeta({ traceparent: VALID, tracestate: 'vendor=a' })).toMatchObject({ traceparent: VALID, tracestate: 'vendor=a' });
  });

  it('ignores a malformed traceparent: the call is admitted, nothing of it stored', async () => {
    for (const value of MALFORMED) {
      const meta = await storedMeta({ traceparent: value, tracestate: 'vendor=a', keep: true });
      expect(meta).toEqual({ keep: true });
    }
  });

  it('takes the HTTP headers when _meta names no parent, and _meta first when it does', async () => {
    const other = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-00`;
    expect(await storedMeta(undefined, { traceparent: VALID, tracestate: null })).toEqual({ traceparent: VALID });
    expect(await storedMeta({ traceparent: 'bad' }, { traceparent: other })).toEqual({ traceparent: other });
    expect(await storedMeta({ traceparent: VALID }, { traceparent: other })).toEqual({ traceparent: VALID });
  });

  it('answers the other requests as before', async () => {
    const r = runtime();
    expect(await getTask(r, { auth: 'acme/alice', taskId: '00000000-0000-4000-8000-000000000000' })).toEqual({ kind: 'not-found' });
  });

  it("names the package's version as the tracer's", () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(TRACER_VERSION).toBe(manifest.version);
  });
});
