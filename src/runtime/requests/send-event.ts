import { randomUUID } from 'node:crypto';
import { isEventType, sendRefusalMessage } from '../../core/event-rules.js';
import { authKeyOf, type Principal } from '../../core/principal.js';
import { encodeStepValue } from '../../core/step-value.js';
import type { RequestHost } from './host.js';
import { couldBeTask } from './task-id.js';
import { sendEventSpan, traced } from '../../trace/request-span.js';

/**
 * An event sent to a task (`runtime.sendEvent`): `type` is what the task's wait names
 * (`ctx.step.waitForEvent(name, { type, … })`), `payload` any JSON value (absent: null). The
 * sender is `principal` (or its `authKey`, `tenant/subject`): it reaches only its own tasks.
 */
export interface SendEventRequest {
  taskId: string;
  type: string;
  payload?: unknown;
  principal?: Principal;
  authKey?: string;
  correlationId?: string;
}

/** Why a send was refused: the task is unknown (or another sender's), expired or finished; the event too large; too many pending; the request itself is invalid. */
export type SendEventRefusal = 'not-found' | 'expired' | 'terminal' | 'too-large' | 'too-many' | 'invalid';

/**
 * What a send came to:
 * - `sent`: the event is stored (before this resolves) as the task's event number `seq`; `woke`:
 *   the task was waiting, and is due now (its wait takes the first pending event of its type).
 *   An event sent before the task's wait is kept until the wait takes it.
 * - `refused`: nothing stored; `reason` and a `message` saying it (audited all the same).
 */
export type SendEventResult =
  { kind: 'sent'; taskId: string; seq: number; woke: boolean; correlationId: string } | { kind: 'refused'; reason: SendEventRefusal; message: string };

/** `sendEvent` for a sender; `null`: an operator (the CLI, the operator listener), who reaches any task. */
export type EventSender = { auth: string } | null;

/** The sender a request names: its principal's auth key, or its auth key as given. */
export function senderOf(request: Pick<SendEventRequest, 'principal' | 'authKey'>): EventSender | undefined {
  if (request.principal !== undefined) return { auth: authKeyOf(request.principal) };
  return typeof request.authKey === 'string' && request.authKey.length > 0 ? { auth: request.authKey } : undefined;
}

/**
 * Sends an event into a task in one store write (`TaskStore.sendEvent`): stored and audited on
 * surface `event`, and the task's outbox entry due now when it waits (published, so a worker of
 * this process looks at once; other processes hear it from the store).
 */
export function sendEvent(host: Pick<RequestHost, 'guard'>, sender: EventSender, request: SendEventRequest): Promise<SendEventResult> {
  return traced(sendEventSpan(couldBeTask(request.taskId) ? request.taskId : undefined), undefined, storeEvent, host, sender, request);
}

async function storeEvent(host: Pick<RequestHost, 'guard'>, sender: EventSender, request: SendEventRequest): Promise<SendEventResult> {
  const { context: ctx } = host.guard;
  const invalid = (message: string): SendEventResult => ({ kind: 'refused', reason: 'invalid', message });
  if (!isEventType(request.type)) return invalid('an event type is text of 1 to 200 characters without control characters');
  let payloadText: string;
  try {
    payloadText = encodeStepValue('event', request.payload ?? null).text ?? 'null';
  } catch {
    return invalid('an event payload is a JSON value (no functions, bigints, NaN, Infinity, cycles or class instances)');
  }
  const { maxEventBytes, maxPendingEvents } = ctx.limits;
  const notFound: SendEventResult = { kind: 'refused', reason: 'not-found', message: sendRefusalMessage('NOT_FOUND', ctx.limits) };
  if (typeof request.taskId !== 'string' || !couldBeTask(request.taskId)) return notFound;
  const correlationId = request.correlationId ?? randomUUID();
  const authKey = sender === null ? null : sender.auth;
  const input = {
    taskId: request.taskId,
    authKey,
    type: request.type,
    payloadText,
    key: null,
    maxEventBytes,
    maxPendingEvents,
    now: ctx.clock(),
    correlationId,
  };
  const out = await ctx.timed('sendEvent', ctx.started(), ctx.store.sendEvent(input));
  const audited = authKey ?? out.record?.authKey ?? '';
  ctx.decided({
    surface: 'event',
    decision: out.decision,
    authKey: audited,
    taskId: request.taskId,
    correlationId,
    status: out.record?.status ?? null,
    detail: request.type,
  });
  if (out.decision === 'APPLY_EVENT') {
    if (out.woke && out.record !== null) ctx.changes.publish(out.record.taskId, out.record.version);
    return { kind: 'sent', taskId: request.taskId, seq: out.seq!, woke: out.woke, correlationId };
  }
  const reason: SendEventRefusal =
    out.decision === 'BLOCK_EXPIRED'
      ? 'expired'
      : out.decision === 'BLOCK_TERMINAL_REWRITE'
        ? 'terminal'
        : out.decision === 'BLOCK_EVENT_SIZE'
          ? 'too-large'
          : out.decision === 'BLOCK_EVENT_LIMIT'
            ? 'too-many'
            : 'not-found';
  // Another sender's task reads as an unknown one, expired included: nothing says it exists.
  if (out.record === null) return notFound;
  return { kind: 'refused', reason, message: sendRefusalMessage(out.decision, ctx.limits) };
}
