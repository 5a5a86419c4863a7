import { context as contextApi, isSpanContextValid, ROOT_CONTEXT, trace, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { META_KEYS } from '../core/meta-keys.js';
import type { WireRequest } from '../core/types.js';

/**
 * A W3C trace context as it travels: `traceparent` and `tracestate`, the names of the HTTP headers
 * and of the `_meta` keys MCP requests carry them in. A task's stored request keeps one (see
 * `stampTraceContext`), so a run in any worker process joins its requestor's trace.
 */
export interface TraceCarrier {
  traceparent?: unknown;
  tracestate?: unknown;
}

/** The longest `traceparent` read: version 00 is 55 characters; a later version may append fields. */
const MAX_TRACEPARENT = 128;
/** The longest `tracestate` kept (the W3C text's own bound for what a vendor must pass on). */
const MAX_TRACESTATE = 512;

const propagator = new W3CTraceContextPropagator();

/** Reads only bounded strings: anything else is as if absent (the propagator then ignores it). */
const boundedGetter: TextMapGetter<TraceCarrier> = {
  keys: (carrier) => Object.keys(carrier),
  get(carrier, key) {
    const value = key === 'traceparent' ? carrier.traceparent : key === 'tracestate' ? carrier.tracestate : undefined;
    const most = key === 'traceparent' ? MAX_TRACEPARENT : MAX_TRACESTATE;
    return typeof value === 'string' && value.length <= most ? value : undefined;
  },
};

const recordSetter: TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    carrier[key] = value;
  },
};

/**
 * The context of a remote parent `carrier` names, on top of `base`; null when it names none a
 * span can have as parent: no `traceparent`, or one that is malformed, too long, or all zeros
 * (ignored, never an error). A `tracestate` that is not a string of at most 512 characters is
 * dropped; the parent stays.
 */
export function remoteParent(carrier: TraceCarrier | null | undefined, base: Context = ROOT_CONTEXT): Context | null {
  if (carrier === null || carrier === undefined || typeof carrier.traceparent !== 'string') return null;
  const extracted = propagator.extract(base, carrier, boundedGetter);
  if (extracted === base) return null;
  const parent = trace.getSpanContext(extracted);
  return parent !== undefined && parent.isRemote === true && isSpanContextValid(parent) ? extracted : null;
}

/**
 * The first of `carriers` that names a valid remote parent (a request's `_meta`, then its HTTP
 * headers), as a context on top of the active one; else the active context.
 */
export function parentContext(...carriers: Array<TraceCarrier | null | undefined>): Context {
  const active = contextApi.active();
  for (const carrier of carriers) {
    const found = remoteParent(carrier, active);
    if (found !== null) return found;
  }
  return active;
}

/** A trace context as a task's stored request keeps it: a well-formed `traceparent`, a `tracestate` when there is one. */
export interface StoredTrace {
  traceparent: string;
  tracestate?: string;
}

/** The `traceparent` (and `tracestate`) of the span in `ctx`, to store or send; null when it has no valid span context. */
export function traceCarrierOf(ctx: Context): StoredTrace | null {
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return null;
  const out: Record<string, string> = {};
  propagator.inject(ctx, out, recordSetter);
  const { traceparent, tracestate } = out;
  if (traceparent === undefined) return null;
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate };
}

/**
 * Writes the trace context of a task's admission into the request about to be stored
 * (`META_KEYS.traceparent`, `META_KEYS.tracestate`): the admitting span's own, which is the
 * requestor's when no SDK records here. Whatever the client sent under those keys is replaced,
 * or removed when there is none to store: a stored `traceparent` is always well formed and
 * always this admission's. `stored.params` is the admission's own copy.
 */
export function stampTraceContext(stored: WireRequest, carrier: StoredTrace | null): void {
  const meta = stored.params._meta as Record<string, unknown> | undefined;
  if (carrier === null && (meta === undefined || (!(META_KEYS.traceparent in meta) && !(META_KEYS.tracestate in meta)))) return;
  const rest = Object.assign({}, meta ?? {});
  delete rest[META_KEYS.traceparent];
  delete rest[META_KEYS.tracestate];
  stored.params._meta = carrier === null ? rest : Object.assign(rest, carrier);
}

/**
 * The context a run of a task has as parent: the trace context its admission stored, or null
 * when it stored none (or something that is not one: a row written by hand, an older version).
 */
export function storedParent(request: unknown): Context | null {
  const meta = (request as { params?: { _meta?: TraceCarrier } } | null)?.params?._meta;
  return meta === undefined ? null : remoteParent(meta);
}

/**
 * A request whose trace context is one a worker can join: the request as it is when its `_meta`
 * names none, else a copy with a well-formed one (written back by the propagator) or none at all
 * (a library admission, `createTask`, stores what `stampTraceContext` would).
 */
export function withCheckedTrace(request: WireRequest): WireRequest {
  const meta = request.params._meta as Record<string, unknown> | undefined;
  if (meta === undefined || (!(META_KEYS.traceparent in meta) && !(META_KEYS.tracestate in meta))) return request;
  const parent = remoteParent(meta);
  const checked: WireRequest = { method: request.method, params: Object.assign({}, request.params) };
  stampTraceContext(checked, parent === null ? null : traceCarrierOf(parent));
  return checked;
}
