import { context as contextApi, SpanKind, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { endSpan, SPAN_ATTRIBUTES, startSpan } from './tracer.js';

/**
 * The methods the request layer answers, as `mcp.method.name` names them. `tasks/update` is a
 * task's answers on either wire (on 2025-11-25 they come as responses on a `tasks/result` stream).
 */
export type RequestMethod = 'tools/call' | 'tasks/get' | 'tasks/result' | 'tasks/cancel' | 'tasks/list' | 'tasks/update';

/**
 * A span of one request: named after its method, a server span, under `parent` (the active
 * context when absent), with the task it names when it names one.
 */
export function requestSpan(method: RequestMethod, parent?: Context, taskId?: string): Span {
  const span = startSpan(method, SpanKind.SERVER, parent);
  if (span.isRecording()) {
    span.setAttribute(SPAN_ATTRIBUTES.mcpMethod, method);
    if (taskId !== undefined) span.setAttribute(SPAN_ATTRIBUTES.taskId, taskId);
  }
  return span;
}

/**
 * A span of an event sent to a task (`runtime.sendEvent`, `tasks send-event`, the operator's
 * POST): not an MCP method, so an internal span named `send event` with no `mcp.method.name`,
 * carrying the task it names; it ends with the outcome (`sent` or `refused`).
 */
export function sendEventSpan(taskId: string | undefined): Span {
  const span = startSpan('send event', SpanKind.INTERNAL);
  if (span.isRecording() && taskId !== undefined) span.setAttribute(SPAN_ATTRIBUTES.taskId, taskId);
  return span;
}

/**
 * `fn(...args)`, a request's decision, under `span` (active while it runs when the span records,
 * so the store's round trips are its children); the span ends with the outcome's attributes
 * (`outcomeAttributes`) or its error. A span that records nothing costs no promise of its own.
 */
export function traced<A extends unknown[], R>(span: Span, parent: Context | undefined, fn: (...args: A) => Promise<R>, ...args: A): Promise<R> {
  if (!span.isRecording()) {
    span.end();
    return fn(...args);
  }
  const active = trace.setSpan(parent ?? contextApi.active(), span);
  return contextApi.with(active, fn, undefined, ...args).then(
    (outcome) => {
      endSpan(span, outcomeAttributes(outcome));
      return outcome;
    },
    (error: unknown) => {
      endSpan(span, null, error);
      throw error;
    },
  );
}

/**
 * What a request's outcome says, as attributes: its `kind`, its `decision`, and the task it is
 * about (id, tool, status) when it carries a record. Outcomes are plain data of a few shapes; a
 * field that is not there is left out.
 */
export function outcomeAttributes(outcome: unknown): Attributes {
  const out: Attributes = {};
  if (typeof outcome !== 'object' || outcome === null) return out;
  const o = outcome as { kind?: unknown; decision?: unknown; tool?: unknown; record?: unknown };
  if (typeof o.kind === 'string') out[SPAN_ATTRIBUTES.outcome] = o.kind;
  if (typeof o.decision === 'string') out[SPAN_ATTRIBUTES.decision] = o.decision;
  if (typeof o.tool === 'string') out[SPAN_ATTRIBUTES.tool] = o.tool;
  const record = o.record as { taskId?: unknown; toolName?: unknown; status?: unknown } | null | undefined;
  if (typeof record === 'object' && record !== null) {
    if (typeof record.taskId === 'string') out[SPAN_ATTRIBUTES.taskId] = record.taskId;
    if (typeof record.toolName === 'string') out[SPAN_ATTRIBUTES.tool] = record.toolName;
    if (typeof record.status === 'string') out[SPAN_ATTRIBUTES.status] = record.status;
  }
  return out;
}
