import type { Guard } from '../service/guard.js';
import type { GuardContext } from '../service/guard-context.js';
import type { ListOutcome, QuietIf, ReadOnlyMethod, ReadOutcome } from '../service/outcomes.js';
import { awaitResult, type AwaitResultInput } from '../service/result-wait.js';
import { rideThrough } from '../service/ride-through.js';

export type { AwaitResultInput } from '../service/result-wait.js';

/**
 * A requestor's reads, where a request reads: each runs through a short store outage instead of
 * failing at its first error. The guard's `requestor` decides and audits one look; these add
 * the wait a requestor is owed (`limits.storeOutageMs`), and `awaitTaskResult` assembles the
 * held `tasks/result` from the guard's parts.
 */

/**
 * Runs a read for a requestor through a store outage of up to `limits.storeOutageMs` (see
 * `rideThrough`); past it, or when `signal` aborts, the store's error is thrown, which each
 * wire answers as the retryable `Store unavailable`. Reads only: a write of unknown fate is
 * never sent again blindly.
 */
export function outlast<T>(context: Pick<GuardContext, 'limits'>, read: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  return rideThrough(read, context.limits.storeOutageMs, signal);
}

/** `tasks/get`, or one look of `tasks/result` without waiting, through a store outage. */
export function readTask(
  guard: Pick<Guard, 'context' | 'requestor'>,
  input: { auth: string; method: ReadOnlyMethod; taskId: string; correlationId?: string; quietIf?: QuietIf },
): Promise<ReadOutcome> {
  return outlast(guard.context, () => guard.requestor.read(input));
}

/** `tasks/list`: one page of the caller's unexpired tasks, through a store outage. A bad or foreign cursor throws INVALID_CURSOR. */
export function listTasks(
  guard: Pick<Guard, 'context' | 'requestor'>,
  input: { auth: string; cursor?: string | undefined; limit?: number; correlationId?: string },
): Promise<ListOutcome> {
  return outlast(guard.context, () => guard.requestor.list(input));
}

/**
 * `tasks/result`, held until the task is terminal (see `awaitResult` in `result-wait.ts`): the
 * guard's change feed, events and clock, the requestor's reads, the relay's fallback poll, and
 * each look run through a store outage until `input.signal` aborts.
 */
export function awaitTaskResult(guard: Pick<Guard, 'context' | 'requestor' | 'relay'>, input: AwaitResultInput): Promise<ReadOutcome> {
  const { context, requestor, relay } = guard;
  const parts = {
    changes: context.changes,
    events: context.events,
    clock: context.clock,
    reads: requestor,
    fallbackPollMs: () => relay.fallbackPollMs(),
    outlast: <T>(read: () => Promise<T>) => outlast(context, read, input.signal),
  };
  return awaitResult(parts, input);
}
