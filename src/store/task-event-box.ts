import type { EventDecision } from '../core/decisions.js';
import type { Fence, Millis, TaskRecord } from '../core/types.js';

/**
 * An event sent to a task (`TaskEventBox.sendEvent`). The sender is `authKey` (its tasks only) or,
 * null, an operator (any task); the store judges it with `decideSendEvent`.
 */
export interface SendEventInput {
  taskId: string;
  authKey: string | null;
  type: string;
  /** The payload's JSON text (checked storable by the caller); its UTF-8 bytes are bounded by `maxEventBytes`. */
  payloadText: string;
  /** The correlation key it was sent by (null: by task id). */
  key: string | null;
  maxEventBytes: number;
  maxPendingEvents: number;
  now: Millis;
  correlationId: string;
}

/**
 * `record` is the task as it stood (null unless the decision found it the sender's, or the sender
 * is an operator); `seq` the stored event's number; `woke`: the task had a pending wait, and its
 * outbox entry is due now (its change is to be published so a worker looks).
 */
export interface SendEventOutcome {
  decision: EventDecision;
  record: TaskRecord | null;
  seq: number | null;
  woke: boolean;
}

/** A run takes an event for its wait at `position` (`TaskEventBox.takeEvent`). */
export interface TakeEventInput {
  fence: Fence;
  type: string;
  position: number;
  now: Millis;
}

/**
 * `HELD`: `event` is the event this wait took now or before (null: none of its type is pending);
 * `LOST`: the run no longer holds the task (nothing taken).
 */
export type TakeEventOutcome = { decision: 'HELD'; event: { seq: number; payload: unknown } | null } | { decision: 'LOST'; event: null };

/**
 * The event role: events sent into tasks and taken by their waits. A send is one transaction
 * (the task row, its pending count, the event stored, the task's outbox entry due now when its
 * journal holds a `waiting` event wait, one audit line on surface `event`). A take is one fenced
 * transaction: the event already taken at the position, else the first pending one of the type,
 * marked consumed at that position. A suspension that records a wait (`RecordStepInput.eventType`)
 * makes the outbox entry due now when an event of its type is already pending.
 */
export interface TaskEventBox {
  sendEvent(input: SendEventInput): Promise<SendEventOutcome>;
  takeEvent(input: TakeEventInput): Promise<TakeEventOutcome>;
}
