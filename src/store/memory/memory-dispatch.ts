import { holdsSlot, isWaitingMessage, slotFree, slotOf, slotScope, waitingMessage } from '../../core/concurrency-rules.js';
import { resultDigest } from '../../core/digest.js';
import { claimDetail, decideDispatch, holdsFence, isForClaimer } from '../../core/dispatch-rules.js';
import type { Fence, Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import type { AuditEntry, ClaimInput } from '../types.js';

/** One outbox entry: a task waiting to be dispatched, until it is done. */
export interface OutboxEntry {
  taskId: string;
  createdAt: Millis;
  /** Not offered to claimers before this (a held lease's expiry). */
  availableAt: Millis;
  doneAt: Millis | null;
}

/**
 * The dispatch role of the memory store, over the store's own maps: claims, heartbeats and
 * releases of leases, each the core's rule applied to the stored record. Like every memory
 * operation each function runs to completion without awaiting, so it is atomic by construction.
 */
export interface MemoryDispatchState {
  readonly tasks: ReadonlyMap<string, TaskRecord>;
  /** taskId → its outbox entry; insertion order is dispatch order among entries available at the same time. */
  readonly outbox: Map<string, OutboxEntry>;
  /** Keeps the store's active-task count in step with a task's status (an abandon ends it). */
  track(record: TaskRecord): void;
  audit(line: AuditEntry): void;
}

export function claimIn(state: MemoryDispatchState, input: ClaimInput): TaskRecord[] {
  const claimed: TaskRecord[] = [];
  // Runs per concurrency scope, counted once per walk and kept up to date by its claims.
  const running = new Map<string, number>();
  const due = [...state.outbox.values()].filter((e) => e.doneAt === null && e.availableAt <= input.now).sort((a, b) => a.availableAt - b.availableAt);
  for (const entry of due) {
    if (claimed.length >= input.limit) break;
    const task = state.tasks.get(entry.taskId) ?? null;
    // Another app's task, or another tool's, stays untouched and due for a worker it is for.
    if (task !== null && !isForClaimer(task, input)) continue;
    const step = decideDispatch(task, input.now, input.maxAttempts);
    if (step.kind === 'close') entry.doneAt = input.now;
    if (step.kind === 'defer') entry.availableAt = step.until;
    if (task === null || step.kind === 'close' || step.kind === 'leave' || step.kind === 'defer') continue;
    // A task of a full concurrency key stays due, unleased: a run's end frees its slot.
    if (step.kind === 'claim' && !takesSlot(state, input, task, running)) continue;
    task.version += 1;
    task.lastUpdatedAt = input.now;
    if (step.kind === 'abandon') {
      task.status = 'failed';
      state.track(task);
      task.result = input.abandonedResult;
      task.resultDigest = resultDigest(input.abandonedResult);
      task.leaseOwner = null;
      task.leaseExpiresAt = null;
      entry.doneAt = input.now;
      audit(state, input.now, task, input.correlationId, 'APPLY_TRANSITION', 'abandoned');
      continue;
    }
    const detail = claimDetail(task, input.owner);
    if (isWaitingMessage(task.statusMessage)) task.statusMessage = null;
    task.attempt += 1;
    task.leaseOwner = input.owner;
    task.leaseExpiresAt = input.now + input.leaseMs;
    entry.availableAt = task.leaseExpiresAt;
    audit(state, input.now, task, input.correlationId, 'APPLY_TRANSITION', detail);
    claimed.push(structuredClone(task));
  }
  return claimed;
}

/**
 * Whether a claim may take `task` (claimable, about to be leased) as far as its concurrency key
 * goes: a task of no key always; one of a key while fewer than its limit run, counting this
 * walk's claims, and its slot is then counted. A task left waiting is told so in its status
 * message, written (a status write: version + 1) only when it says something else.
 */
function takesSlot(state: MemoryDispatchState, input: ClaimInput, task: TaskRecord, running: Map<string, number>): boolean {
  const slot = slotOf(task.request);
  if (slot === null) return true;
  const scope = slotScope(task, slot.key);
  let count = running.get(scope);
  if (count === undefined) {
    count = 0;
    for (const other of state.tasks.values()) {
      const theirs = other.app === task.app && other.toolName === task.toolName ? slotOf(other.request) : null;
      if (theirs !== null && theirs.key === slot.key && holdsSlot(other, input.now)) count++;
    }
  }
  if (slotFree(slot.limit, count)) {
    running.set(scope, count + 1);
    return true;
  }
  running.set(scope, count);
  const message = waitingMessage(slot.key, count, slot.limit);
  if (task.statusMessage !== message) {
    task.statusMessage = message;
    task.version += 1;
    task.lastUpdatedAt = input.now;
    audit(state, input.now, task, input.correlationId, 'APPLY_TRANSITION', 'concurrency wait');
  }
  return false;
}

export function heartbeatIn(state: MemoryDispatchState, { fence, now, leaseMs }: { fence: Fence; now: Millis; leaseMs: number }): boolean {
  const task = fenced(state, fence, now);
  if (task === null) return false;
  task.leaseExpiresAt = now + leaseMs;
  const entry = state.outbox.get(task.taskId);
  if (entry !== undefined) entry.availableAt = task.leaseExpiresAt;
  return true;
}

export function releaseIn(state: MemoryDispatchState, { fence, now, correlationId }: { fence: Fence; now: Millis; correlationId: string }): boolean {
  const task = fenced(state, fence, now);
  if (task === null) return false;
  task.leaseOwner = null;
  task.leaseExpiresAt = null;
  const entry = state.outbox.get(task.taskId);
  if (entry !== undefined) entry.availableAt = now;
  audit(state, now, task, correlationId, 'RELEASE_LEASE', `release ${fence.owner}`);
  return true;
}

/** Outbox entries not yet closed, due or not. */
export function pendingIn(state: MemoryDispatchState): number {
  return [...state.outbox.values()].filter((e) => e.doneAt === null).length;
}

/** Closes the task's open entry, so no claimer dispatches it again (a terminal status, a cancel). */
export function closeEntry(outbox: ReadonlyMap<string, OutboxEntry>, taskId: string, now: Millis): void {
  const entry = outbox.get(taskId);
  if (entry !== undefined && entry.doneAt === null) entry.doneAt = now;
}

/** The task when `fence` still holds it (`holdsFence`). */
function fenced(state: MemoryDispatchState, fence: Fence, now: Millis): TaskRecord | null {
  const task = state.tasks.get(fence.taskId) ?? null;
  return holdsFence(task, fence, now) ? task : null;
}

function audit(
  state: MemoryDispatchState,
  at: Millis,
  task: TaskRecord,
  correlationId: string,
  decision: 'APPLY_TRANSITION' | 'RELEASE_LEASE',
  detail: string,
): void {
  state.audit(auditLine({ at, surface: 'transition', decision, authKey: task.authKey, taskId: task.taskId, correlationId, record: task, detail }));
}
