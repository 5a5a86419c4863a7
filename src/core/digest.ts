import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { TasklatchError } from './errors.js';
import type { WireRequest } from './types.js';

/** Lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON of `value`. */
export function jcsSha256(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) {
    throw new TasklatchError('INVALID_INPUT', 'value has no JSON representation');
  }
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Request digest: JCS SHA-256 of `{ method, params }` with `params._meta` and `params.task`
 * removed, so neither key order, whitespace, `_meta` (which carries the idempotency key) nor the
 * task augmentation changes it. Any other difference (tool name, argument value) does.
 */
export function requestDigest(request: WireRequest): string {
  const { _meta: _ignoredMeta, task: _ignoredTask, ...params } = request.params;
  return jcsSha256({ method: request.method, params });
}

/** Result digest: JCS SHA-256 of a stored or written result object. */
export function resultDigest(result: unknown): string {
  return jcsSha256(result);
}

/** What identifies a tool's contract with its callers: what `toolDigest` is computed over. */
export interface ToolDefinition {
  name: string;
  /** The JSON Schema of its arguments. */
  inputSchema: unknown;
  /** The JSON Schema of its structured result, when it declares one. */
  outputSchema?: unknown;
  execution?: unknown;
}

/**
 * Tool digest: JCS SHA-256 of the tool's name, input and output JSON Schemas and execution.
 * Title and description are left out: rewording a tool does not change what its tasks hold.
 */
export function toolDigest(tool: ToolDefinition): string {
  return jcsSha256({ name: tool.name, inputSchema: tool.inputSchema ?? null, outputSchema: tool.outputSchema ?? null, execution: tool.execution ?? null });
}
