import type { CreateDecision, LimitDecision } from './decisions.js';
import type { Millis, TaskCapabilities, TaskRecord, TaskSupport, ToolDescriptor, WireRequest } from './types.js';
import { visibleTo } from './visibility.js';

/** The `_meta` member that carries an idempotency key. */
export const IDEMPOTENCY_META_KEY = 'io.tasklatch/idempotency-key';

/** A request is augmented when `params.task` is an object (possibly empty). */
export function isAugmented(request: WireRequest): boolean {
  const task = request.params.task;
  return typeof task === 'object' && task !== null && !Array.isArray(task);
}

/** `tool.execution.taskSupport`, and `forbidden` when absent. */
export function taskSupportOf(tool: ToolDescriptor): TaskSupport {
  return tool.execution?.taskSupport ?? 'forbidden';
}

/** The idempotency key of `params._meta`, or null when there is none (or it is not a string). */
export function idempotencyKeyOf(request: WireRequest): string | null {
  const meta = request.params._meta;
  if (typeof meta !== 'object' || meta === null) return null;
  const key = (meta as Record<string, unknown>)[IDEMPOTENCY_META_KEY];
  return typeof key === 'string' ? key : null;
}

export function declaresTaskCalls(capabilities: TaskCapabilities): boolean {
  return capabilities.requests?.tools?.call !== undefined;
}

/** What the entry steps (1–4) of the create surface say before any record is looked at. */
export type CreateEntry = Exclude<CreateDecision, 'REPLAY_TASK' | 'BLOCK_IDEMPOTENCY_COLLISION' | 'ACCEPT_TASK'> | 'ADMIT';

/** Create rules 1–4: capability and taskSupport, decided from the request alone. */
export function decideCreateEntry(input: { capabilities: TaskCapabilities; tool: ToolDescriptor; request: WireRequest }): CreateEntry {
  const augmented = isAugmented(input.request);
  const support = taskSupportOf(input.tool);
  if (augmented && !declaresTaskCalls(input.capabilities)) return 'BLOCK_CAPABILITY';
  if (augmented && support === 'forbidden') return 'BLOCK_TASK_FORBIDDEN';
  if (!augmented && support === 'required') return 'BLOCK_TASK_REQUIRED';
  if (!augmented) return 'ACCEPT_NORMAL';
  return 'ADMIT';
}

/** The part of a prior record the admission rule reads. */
export type PriorRecord = Pick<TaskRecord, 'authKey' | 'idempotencyKey' | 'requestDigest' | 'expiresAt'>;

/**
 * Create rules 5–6: idempotency. `prior` is whatever record the store found for the key; the
 * rule re-checks its auth key, key and expiry, so a store that hands over a wider match still
 * decides correctly.
 */
export function decideAdmission(input: {
  auth: string;
  idempotencyKey: string | null;
  requestDigest: string;
  prior: PriorRecord | null;
  now: Millis;
}): 'REPLAY_TASK' | 'BLOCK_IDEMPOTENCY_COLLISION' | 'ACCEPT_TASK' {
  const { prior } = input;
  if (input.idempotencyKey !== null && prior !== null && prior.idempotencyKey === input.idempotencyKey && visibleTo(prior, input.auth, input.now)) {
    return prior.requestDigest === input.requestDigest ? 'REPLAY_TASK' : 'BLOCK_IDEMPOTENCY_COLLISION';
  }
  return 'ACCEPT_TASK';
}

/**
 * Admission under tasklatch's active-task limit: idempotency first, then the limit. A replay of
 * (or a collision with) a live task is answered as such even at the limit, so a retry of an
 * existing task is never refused by it; only what would be a new task counts against
 * `maxActive`. `activeCount` is the caller's non-terminal, unexpired tasks; with no limit
 * (`maxActive` null or absent) it is not read. The same holds for `maxStored` and
 * `storedCount`, the caller's unexpired tasks of any status; the active limit is decided first.
 */
export function decideLimitedAdmission(input: {
  auth: string;
  idempotencyKey: string | null;
  requestDigest: string;
  prior: PriorRecord | null;
  now: Millis;
  maxActive?: number | null;
  activeCount: number;
  maxStored?: number | null;
  storedCount?: number;
}): 'REPLAY_TASK' | 'BLOCK_IDEMPOTENCY_COLLISION' | 'ACCEPT_TASK' | LimitDecision {
  const decision = decideAdmission(input);
  if (decision !== 'ACCEPT_TASK') return decision;
  if (input.maxActive != null && input.activeCount >= input.maxActive) return 'BLOCK_TASK_LIMIT';
  return input.maxStored != null && (input.storedCount ?? 0) >= input.maxStored ? 'BLOCK_STORED_LIMIT' : 'ACCEPT_TASK';
}

/** The whole create surface, in the contract's precedence. */
export function decideCreate(input: {
  auth: string;
  capabilities: TaskCapabilities;
  tool: ToolDescriptor;
  request: WireRequest;
  idempotencyKey: string | null;
  requestDigest: string;
  prior: PriorRecord | null;
  now: Millis;
}): CreateDecision {
  const entry = decideCreateEntry(input);
  return entry === 'ADMIT' ? decideAdmission(input) : entry;
}
