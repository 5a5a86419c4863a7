import { IDEMPOTENCY_META_KEY } from '../core/create-rules.js';
import { TasklatchError } from '../core/errors.js';
import { isStorableText } from '../core/text.js';
import { jsonBytes } from './limits.js';

/** The largest task ids, idempotency keys and JSON nesting a request may carry. */
export const INPUT_BOUNDS = { taskIdLength: 256, idempotencyKeyLength: 256, jsonDepth: 64 } as const;

/** A task id the stores can look up as it is: anything else is no task of anyone's. */
export function isPlausibleTaskId(taskId: unknown): taskId is string {
  return typeof taskId === 'string' && taskId.length > 0 && taskId.length <= INPUT_BOUNDS.taskIdLength && isStorableText(taskId);
}

/**
 * Checks what a `tools/call` carries before anything is decided or stored: nesting no deeper
 * than the bound (deeper would overflow the canonical-JSON digest), every string and key storable
 * text (PostgreSQL refuses a NUL in jsonb; a lone surrogate is not UTF-8), `arguments` no larger
 * than `maxArgumentBytes` as JSON, and an idempotency key, where there is one, a string of bounded
 * length. Throws INVALID_INPUT naming the problem; the
 * wires answer it with invalid params.
 */
export function checkCallInput(params: Record<string, unknown>, headerKey: string | null, maxArgumentBytes = Infinity): void {
  checkJson(params, 'params');
  const argumentBytes = params.arguments === undefined ? 0 : jsonBytes(params.arguments);
  if (argumentBytes > maxArgumentBytes)
    throw new TasklatchError('INVALID_INPUT', `arguments are ${argumentBytes} bytes; at most ${maxArgumentBytes} are accepted`);
  const meta = params._meta;
  const key = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[IDEMPOTENCY_META_KEY] : undefined;
  if (key !== undefined) checkKey(key, `_meta["${IDEMPOTENCY_META_KEY}"]`);
  if (headerKey !== null) checkKey(headerKey, 'the Idempotency-Key header');
}

function checkKey(key: unknown, where: string): void {
  if (typeof key !== 'string') throw new TasklatchError('INVALID_INPUT', `${where} must be a string`);
  if (key.length === 0 || key.length > INPUT_BOUNDS.idempotencyKeyLength) {
    throw new TasklatchError('INVALID_INPUT', `${where} must have 1 to ${INPUT_BOUNDS.idempotencyKeyLength} characters`);
  }
  if (!isStorableText(key)) throw new TasklatchError('INVALID_INPUT', `${where} holds a NUL or an unpaired surrogate`);
}

/** A value of the walk, with where it is: its path is spelled out only for the message of a refusal. */
interface Walked {
  value: unknown;
  depth: number;
  /** The object or array holding it (null for the walk's root), and its key or index there. */
  parent: Walked | null;
  name: string;
}

/** `where`, then `.name` (its first 40 characters) for each step down to `at`. */
function pathOf(where: string, at: Walked): string {
  return at.parent === null ? where : `${pathOf(where, at.parent)}.${at.name.slice(0, 40)}`;
}

/** An iterative walk: a recursive one is what deep input would overflow. */
function checkJson(value: unknown, where: string): void {
  const stack: Walked[] = [{ value, depth: 0, parent: null, name: '' }];
  while (stack.length > 0) {
    const at = stack.pop()!;
    const { value: v, depth } = at;
    if (typeof v === 'string') {
      if (!isStorableText(v)) throw new TasklatchError('INVALID_INPUT', `${pathOf(where, at)} holds a NUL or an unpaired surrogate`);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= INPUT_BOUNDS.jsonDepth) throw new TasklatchError('INVALID_INPUT', `${where} is nested deeper than ${INPUT_BOUNDS.jsonDepth} levels`);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ value: v[i] as unknown, depth: depth + 1, parent: at, name: String(i) });
      continue;
    }
    for (const name in v) {
      if (!Object.hasOwn(v, name)) continue;
      if (!isStorableText(name)) throw new TasklatchError('INVALID_INPUT', `${pathOf(where, at)} has a key with a NUL or an unpaired surrogate`);
      stack.push({ value: (v as Record<string, unknown>)[name], depth: depth + 1, parent: at, name });
    }
  }
}
