import type { EventDecision } from './decisions.js';
import { isStorableText } from './text.js';
import { isExpired } from './time.js';
import { isTerminal, type Millis, type TaskRecord } from './types.js';

/**
 * The event surface: events sent into a task from outside (a webhook, an operator).
 *
 * - **event**: a typed JSON payload stored for one task (`task_events`), in send order (`seq`).
 *   It stays pending until a wait of its type consumes it; a task keeps a bounded number pending.
 * - **wait**: a journal row of kind `event` (`ctx.step.waitForEvent(name, { type, timeoutMs })`),
 *   `waiting` with its timeout as `wakeAt` while no event of its type has come (the task is
 *   suspended as by a sleep: no lease, its outbox entry due at the timeout), then `completed`
 *   with the payload of the first pending event of its type, or with null at the timeout.
 * - **consumed**: an event a wait took; it records the journal position of that wait, so a run
 *   that took it and stopped before recording the wait's value takes the same event again.
 */

/** The part of a record the send rule reads. */
export type EventTarget = Pick<TaskRecord, 'authKey' | 'status' | 'expiresAt'>;

/**
 * Send an event to a task, in this precedence: the task must exist, belong to the sender (`auth`;
 * null: an operator, who reaches every task), be unexpired and not terminal; then the payload's
 * size, then the task's pending events. Only `APPLY_EVENT` stores the event.
 */
export function decideSendEvent(input: {
  record: EventTarget | null;
  auth: string | null;
  now: Millis;
  payloadBytes: number;
  maxEventBytes: number;
  pending: number;
  maxPendingEvents: number;
}): EventDecision {
  const { record } = input;
  if (record === null) return 'NOT_FOUND';
  if (input.auth !== null && record.authKey !== input.auth) return 'BLOCK_AUTH';
  if (isExpired(record, input.now)) return 'BLOCK_EXPIRED';
  if (isTerminal(record.status)) return 'BLOCK_TERMINAL_REWRITE';
  if (input.payloadBytes > input.maxEventBytes) return 'BLOCK_EVENT_SIZE';
  if (input.pending + 1 > input.maxPendingEvents) return 'BLOCK_EVENT_LIMIT';
  return 'APPLY_EVENT';
}

/**
 * Whether an applied send moves the task's version on: its journal holds a pending wait and no
 * run holds it (suspended: working, no lease). The version + 1 is what other processes are told
 * (a notification of a version they know says nothing new); a run holding the task keeps its
 * fence, and its suspension finds the event pending (`RecordStepInput.eventType`).
 */
export function sendWakes(record: Pick<TaskRecord, 'status' | 'leaseOwner'>, waiting: boolean): boolean {
  return waiting && record.status === 'working' && record.leaseOwner === null;
}

/** What a run does at a wait whose row says `waiting` (`decideEventWait`). */
export type EventWait =
  /** An event of its type was taken: the wait is recorded `completed` with its payload. */
  | { kind: 'RECEIVE'; payload: unknown }
  /** None came and the timeout passed: the wait is recorded `completed` with null. */
  | { kind: 'TIMEOUT' }
  /** None came yet: the task is suspended again until the timeout (or an event wakes it). */
  | { kind: 'SUSPEND'; wakeAt: Millis };

/**
 * A pending wait, once the run has asked the store for an event (`event`: the one it took, or
 * null). An event that came wins over a timeout that passed meanwhile: it was sent in time.
 */
export function decideEventWait(input: { wakeAt: Millis; event: { payload: unknown } | null; now: Millis }): EventWait {
  if (input.event !== null) return { kind: 'RECEIVE', payload: input.event.payload };
  return input.now >= input.wakeAt ? { kind: 'TIMEOUT' } : { kind: 'SUSPEND', wakeAt: input.wakeAt };
}

/** An event type: 1 to 200 characters, none of them control characters (it is matched exactly). */
export function isEventType(type: unknown): type is string {
  return typeof type === 'string' && type.length > 0 && type.length <= 200 && !/[\u0000-\u001f\u007f]/.test(type) && isStorableText(type);
}

/** The status message of a task waiting for an event. */
export function waitingMessage(name: string, type: string, wakeAt: Millis): string {
  return `waiting in step ${JSON.stringify(name)} for event ${JSON.stringify(type)} until ${new Date(wakeAt).toISOString()}`;
}

/** Why a send was refused, as a sender reads it (another tenant's task reads as an unknown one). */
export function sendRefusalMessage(decision: Exclude<EventDecision, 'APPLY_EVENT'>, limits: { maxEventBytes: number; maxPendingEvents: number }): string {
  switch (decision) {
    case 'NOT_FOUND':
    case 'BLOCK_AUTH':
      return 'no such task';
    case 'BLOCK_EXPIRED':
      return 'the task has expired';
    case 'BLOCK_TERMINAL_REWRITE':
      return 'the task has finished';
    case 'BLOCK_EVENT_SIZE':
      return `the event's payload is larger than ${limits.maxEventBytes} bytes`;
    case 'BLOCK_EVENT_LIMIT':
      return `the task already holds ${limits.maxPendingEvents} events no wait has taken`;
  }
}
