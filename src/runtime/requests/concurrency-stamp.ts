import { concurrencySlot } from '../../core/concurrency-rules.js';
import { coerceError, TasklatchError } from '../../core/errors.js';
import { META_KEYS } from '../../core/meta-keys.js';
import type { WireRequest } from '../../core/types.js';
import type { Principal } from '../../tools/principal.js';
import type { TaskTool } from '../../tools/tool.js';

/**
 * Writes a task's concurrency slot into the request about to be stored (`META_KEYS.concurrency`:
 * the key the tool's `concurrency.key` computes from the parsed arguments and the principal,
 * and the limit), or removes the entry for a tool without one. Only admission writes it: an
 * entry of that name the client sent is never stored, so a caller cannot pick its own key or
 * limit. A key function that throws, or returns no usable key, refuses the call
 * (`INVALID_INPUT`) before anything is stored. `stored.params` is the admission's own copy.
 */
export function stampConcurrency(stored: WireRequest, tool: TaskTool, args: unknown, principal: Principal): void {
  const meta = stored.params._meta as Record<string, unknown> | undefined;
  if (tool.concurrency === undefined) {
    if (meta !== undefined && META_KEYS.concurrency in meta) stored.params._meta = withoutEntry(meta);
    return;
  }
  const { concurrency } = tool;
  let chosen: unknown;
  try {
    chosen = concurrency.key === undefined ? undefined : concurrency.key(args as Record<string, unknown>, principal);
  } catch (error) {
    throw new TasklatchError('INVALID_INPUT', `the concurrency key of tool ${tool.name} could not be computed: ${coerceError(error).message}`);
  }
  const slot = concurrencySlot(tool.name, concurrency.limit, chosen);
  stored.params._meta = Object.assign({}, meta ?? {}, { [META_KEYS.concurrency]: slot });
}

/** A request with no concurrency entry (a library admission that names no tool to run: never a key). */
export function withoutConcurrency(request: WireRequest): WireRequest {
  const meta = request.params._meta as Record<string, unknown> | undefined;
  if (meta === undefined || !(META_KEYS.concurrency in meta)) return request;
  return { method: request.method, params: Object.assign({}, request.params, { _meta: withoutEntry(meta) }) };
}

function withoutEntry(meta: Record<string, unknown>): Record<string, unknown> {
  const rest = Object.assign({}, meta);
  delete rest[META_KEYS.concurrency];
  return rest;
}
