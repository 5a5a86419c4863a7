import type { ListDecision, MissDecision, ReadDecision } from './decisions.js';
import type { GuardedRecord } from './transition-rules.js';
import { isTerminal, type Millis, type ReadMethod, type TaskCapabilities, type TaskRecord } from './types.js';
import { classifyMiss, visibleTo } from './visibility.js';

/** The read surface (`tasks/get`, `tasks/result`, `tasks/cancel`), in the contract's precedence. */
export function decideRead(input: { capabilities: TaskCapabilities; method: ReadMethod; auth: string; task: GuardedRecord | null; now: Millis }): ReadDecision {
  const { task, method } = input;
  if (method === 'tasks/cancel' && input.capabilities.cancel === undefined) return 'BLOCK_CAPABILITY';
  const miss = classifyMiss(task, input.auth, input.now);
  if (miss !== null || task === null) return miss ?? 'NOT_FOUND';
  return decideVisibleRead(method, task);
}

/** Read rules 5–7, for a record already known to be visible to the caller. */
export function decideVisibleRead(method: ReadMethod, task: Pick<TaskRecord, 'status'>): ReadDecision {
  switch (method) {
    case 'tasks/get':
      return 'RETURN_STATUS';
    case 'tasks/result':
      if (task.status === 'working') return 'WAIT_TERMINAL';
      if (task.status === 'input_required') return 'WAIT_INPUT';
      return 'RETURN_RESULT';
    case 'tasks/cancel':
      return isTerminal(task.status) ? 'ALREADY_TERMINAL' : 'CANCEL_TASK';
  }
}

/**
 * `tasks/cancel` on a stored record, once the capability is known to be there: a record the
 * caller cannot see is a miss (missing, another auth key, expired), a terminal one is
 * `ALREADY_TERMINAL`, anything else is cancelled. Stores classify a cancel that changed no row
 * with it, and the memory store decides every cancel with it.
 */
export function decideCancel(task: GuardedRecord | null, auth: string, now: Millis): MissDecision | 'ALREADY_TERMINAL' | 'CANCEL_TASK' {
  const miss = classifyMiss(task, auth, now);
  if (miss !== null || task === null) return miss ?? 'NOT_FOUND';
  return isTerminal(task.status) ? 'ALREADY_TERMINAL' : 'CANCEL_TASK';
}

/** List rule 1. */
export function decideList(capabilities: TaskCapabilities): ListDecision {
  return capabilities.list === undefined ? 'BLOCK_CAPABILITY' : 'LIST_FILTERED';
}

/** Total order of a listing: `createdAt`, then `taskId`, ascending. */
export function compareListOrder(a: Pick<TaskRecord, 'createdAt' | 'taskId'>, b: Pick<TaskRecord, 'createdAt' | 'taskId'>): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return compareCodePoints(a.taskId, b.taskId);
}

/**
 * Code-point order, which equals UTF-8 byte order: the order SQLite's BINARY and PostgreSQL's
 * `COLLATE "C"` use. Plain `<` compares UTF-16 units and would disagree above U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  const n = Math.min(left.length, right.length);
  for (let i = 0; i < n; i++) {
    const x = left[i]!.codePointAt(0)!;
    const y = right[i]!.codePointAt(0)!;
    if (x !== y) return x - y;
  }
  return left.length - right.length;
}

/** List rule 2 over a set of records: the caller's unexpired tasks in list order. */
export function visibleTasks<T extends Pick<TaskRecord, 'authKey' | 'expiresAt' | 'createdAt' | 'taskId'>>(
  records: readonly T[],
  auth: string,
  now: Millis,
): T[] {
  return records.filter((r) => visibleTo(r, auth, now)).sort(compareListOrder);
}
