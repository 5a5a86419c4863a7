import { META_KEYS } from '../core/meta-keys.js';

/**
 * Hand-written checks for the shape nearly every request has, so that the hot path (a
 * `tasks/get` poll) pays no schema library: each accepts only what the zod schemas of
 * `messages.ts` accept, and answers null for anything else, which the schemas then judge (and
 * word the error). They never refuse: what they do not recognise goes the slow way.
 */

/** A JSON object (not null, not an array) without an own `__proto__` key, which a copy would treat differently. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Object.hasOwn(value, '__proto__');
}

export interface PlainEnvelope {
  id: string | number | undefined;
  method: string;
  params: Record<string, unknown> | undefined;
}

/** The JSON-RPC envelope of one request or notification, as `Envelope` would parse it; null to ask `Envelope`. */
export function plainEnvelope(body: unknown): PlainEnvelope | null {
  if (!isPlainObject(body) || body.jsonrpc !== '2.0') return null;
  const { id, method, params } = body;
  if (!(id === undefined || typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return null;
  if (typeof method !== 'string' || method.length === 0) return null;
  if (!(params === undefined || isPlainObject(params))) return null;
  return { id, method, params };
}

export interface PlainMeta {
  version: string;
  capabilities: Record<string, unknown>;
}

/** The per-request `_meta`, as `RequestMeta` would parse it; null to ask `RequestMeta`. */
export function plainMeta(meta: unknown): PlainMeta | null {
  if (!isPlainObject(meta)) return null;
  const version = meta[META_KEYS.protocolVersion];
  const capabilities = meta[META_KEYS.clientCapabilities];
  const info = meta[META_KEYS.clientInfo];
  if (typeof version !== 'string' || version.length === 0 || !isPlainObject(capabilities)) return null;
  if (info !== undefined && !(isPlainObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) return null;
  return { version, capabilities };
}

/** `params.taskId`, as `TaskIdParams` would parse it; null to ask `TaskIdParams`. */
export function plainTaskId(params: Record<string, unknown>): string | null {
  const taskId = params.taskId;
  return typeof taskId === 'string' && taskId.length > 0 ? taskId : null;
}

export interface PlainToolCall {
  name: string;
  arguments: Record<string, unknown> | undefined;
}

/** `params.name` and `params.arguments` of a `tools/call`, as `CallToolParams` would parse them; null to ask `CallToolParams`. */
export function plainToolCall(params: Record<string, unknown>): PlainToolCall | null {
  const { name, arguments: args } = params;
  if (typeof name !== 'string' || name.length === 0) return null;
  if (!(args === undefined || isPlainObject(args))) return null;
  return { name, arguments: args };
}
