import {
  context as contextApi,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import type { TaskRecord } from '../core/types.js';
import { storedParent, traceCarrierOf, type StoredTrace } from './trace-context.js';
import { endSpan, SPAN_ATTRIBUTES, startSpan, tracer } from './tracer.js';

/** A run's span and the context its handler, steps and store round trips run in. */
export interface RunTrace {
  readonly span: Span;
  readonly context: Context;
}

/** The trace of a run no executor has spanned (a replay's, a test's): records nothing. */
export const NO_RUN_TRACE: RunTrace = { span: trace.wrapSpanContext(INVALID_SPAN_CONTEXT), context: ROOT_CONTEXT };

/** What a run's parts are spanned as (`tasklatch.step.kind`). */
export type StepKind = 'do' | 'sleep' | 'ask' | 'event' | 'child';

/**
 * The span of one run of a task, from its claim to its release (or terminal write), in a
 * worker of any process. The first run (attempt 1) is a child of the trace context its
 * admission stored, so it joins the requestor's trace; a later run (after a sleep, a
 * suspension for input, a takeover, a deploy's retry) starts a trace of its own, linked to
 * that context: one request's trace does not grow for as long as its task lives.
 */
export function runSpan(record: TaskRecord, workerId: string): RunTrace {
  const stored = storedParent(record.request);
  const first = record.attempt <= 1;
  const parent = stored !== null && first ? stored : ROOT_CONTEXT;
  const linked = stored === null || first ? undefined : trace.getSpanContext(stored);
  const links: Link[] | undefined = linked === undefined ? undefined : [{ context: linked }];
  const span = tracer().startSpan(`run ${record.toolName ?? 'task'}`, { kind: SpanKind.CONSUMER, ...(links === undefined ? {} : { links }) }, parent);
  if (span.isRecording()) {
    span.setAttributes({
      [SPAN_ATTRIBUTES.taskId]: record.taskId,
      [SPAN_ATTRIBUTES.attempt]: record.attempt,
      [SPAN_ATTRIBUTES.workerId]: workerId,
      [SPAN_ATTRIBUTES.app]: record.app,
    });
    if (record.toolName !== null) span.setAttribute(SPAN_ATTRIBUTES.tool, record.toolName);
    if (record.toolVersion !== null) span.setAttribute(SPAN_ATTRIBUTES.toolVersion, record.toolVersion);
  }
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * A span of one part of a run (a step's attempt, a sleep, an ask, an event wait, a child task),
 * under the run's span; null when the run's span records nothing (the no-op path builds nothing).
 */
export function stepSpan(run: RunTrace | undefined, kind: StepKind, name: string, attempt?: number): Span | null {
  if (run === undefined || !run.span.isRecording()) return null;
  const span = startSpan(`${kind === 'do' ? 'step' : kind} ${name}`, SpanKind.INTERNAL, run.context);
  span.setAttributes({ [SPAN_ATTRIBUTES.step]: name, [SPAN_ATTRIBUTES.stepKind]: kind });
  if (attempt !== undefined) span.setAttribute(SPAN_ATTRIBUTES.stepAttempt, attempt);
  return span;
}

/** Ends a part's span (when there is one) with how it went; an error marks it failed. */
export function endStep(span: Span | null, outcome: string, error?: unknown): void {
  if (span !== null) endSpan(span, { [SPAN_ATTRIBUTES.outcome]: outcome }, error);
}

/**
 * `fn(...args)` with `span` active, so what it does (its own spans, the store's round trips) is
 * under it; without a span, `fn` is called as it is.
 */
export function within<A extends unknown[], R>(span: Span | null, parent: Context, fn: (...args: A) => R, ...args: A): R {
  if (span === null) return fn(...args);
  return contextApi.with(trace.setSpan(parent, span), fn, undefined, ...args);
}

/** Ends a run's span with how the run ended (`RunOutcome`); a failed task's run is an error. */
export function endRun(run: RunTrace, outcome: string): void {
  if (run.span.isRecording() && outcome === 'failed') run.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the task failed' });
  endSpan(run.span, { [SPAN_ATTRIBUTES.outcome]: outcome });
}

/** `fn(...args)` in the run's context when its span records (the handler's own spans are then the run's children); else as it is. */
export function inRun<A extends unknown[], R>(run: RunTrace, fn: (...args: A) => R, ...args: A): R {
  if (!run.span.isRecording()) return fn(...args);
  return contextApi.with(run.context, fn, undefined, ...args);
}

/** The trace context of a part's span (under its run's), to store with what it starts (a child task). */
export function spanCarrier(run: RunTrace | undefined, span: Span): StoredTrace | null {
  return traceCarrierOf(trace.setSpan(run?.context ?? ROOT_CONTEXT, span));
}
