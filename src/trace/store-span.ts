import { SpanKind, trace, type Span } from '@opentelemetry/api';
import { endSpan, SPAN_ATTRIBUTES, tracer } from './tracer.js';

/**
 * A store round trip's span (`store <operation>`), a child of the active span; null when no
 * span is active or it records nothing (one context lookup: every `tasks/get` poll passes here).
 */
export function storeSpan(operation: string): Span | null {
  const active = trace.getActiveSpan();
  if (active === undefined || !active.isRecording()) return null;
  const span = tracer().startSpan(`store ${operation}`, { kind: SpanKind.CLIENT });
  span.setAttribute(SPAN_ATTRIBUTES.storeOperation, operation);
  return span;
}

/** Ends a round trip's span; a failed one records its error. */
export function endStoreSpan(span: Span, error?: unknown): void {
  endSpan(span, null, error);
}
