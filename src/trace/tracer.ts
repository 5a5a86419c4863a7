import { SpanStatusCode, trace, type Attributes, type Context, type Span, type SpanKind, type Tracer } from '@opentelemetry/api';
import { coerceError } from '../core/errors.js';

/**
 * The attribute names tasklatch's spans carry, named once (see the README's "Traces" table).
 * `mcp.method.name` is the MCP semantic conventions' own; the rest are ours.
 */
export const SPAN_ATTRIBUTES = {
  mcpMethod: 'mcp.method.name',
  taskId: 'tasklatch.task.id',
  tool: 'tasklatch.tool.name',
  toolVersion: 'tasklatch.tool.version',
  app: 'tasklatch.app',
  attempt: 'tasklatch.task.attempt',
  workerId: 'tasklatch.worker.id',
  decision: 'tasklatch.decision',
  outcome: 'tasklatch.outcome',
  status: 'tasklatch.task.status',
  step: 'tasklatch.step.name',
  stepKind: 'tasklatch.step.kind',
  stepAttempt: 'tasklatch.step.attempt',
  storeOperation: 'tasklatch.store.operation',
} as const;

/** The instrumentation scope's version: the package's (a test pins it to package.json). */
export const TRACER_VERSION = '0.1.0';

let scoped: Tracer | null = null;

/**
 * tasklatch's tracer, from the global provider of `@opentelemetry/api`: a no-op until the
 * application (or the CLI, from the environment) registers an SDK. The API's proxy tracer is
 * taken once and finds a provider registered later by itself.
 */
export function tracer(): Tracer {
  scoped ??= trace.getTracer('tasklatch', TRACER_VERSION);
  return scoped;
}

/** A span of ours, started now under `parent` (the active context when absent). */
export function startSpan(name: string, kind: SpanKind, parent?: Context): Span {
  return tracer().startSpan(name, { kind }, parent);
}

/**
 * Ends `span` with the outcome's attributes, or with the error that ended it (recorded as an
 * exception, the span's status an error). Attributes are only built for a span that records.
 */
export function endSpan(span: Span, attributes: Attributes | null, error?: unknown): void {
  if (span.isRecording()) {
    if (attributes !== null) span.setAttributes(attributes);
    if (error !== undefined) {
      const err = coerceError(error);
      span.recordException(err);
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
    }
  }
  span.end();
}
