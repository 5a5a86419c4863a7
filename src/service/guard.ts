import { GuardContext, type GuardOptions } from './guard-context.js';
import { InputSurface } from './input-surface.js';
import { NotificationRelay } from './notification-relay.js';
import { RequestorSurface } from './requestor-surface.js';
import { WorkerSurface } from './worker-surface.js';

export type { GuardOptions } from './guard-context.js';

/**
 * The guard in front of a store, as its callers hold it: one part per caller, over one shared
 * `GuardContext` (the store, the settings, the change feed, the events). No part forwards to
 * another; each calls the store itself.
 * - `requestor`: what a request decides with stored facts (admit, record a call's decision,
 *   read, cancel, list); the request layer (`src/runtime/requests/`) is its caller.
 * - `answers`: the answers to a task's questions, and the deadlines that end unanswered ones.
 * - `worker`: the `WorkerPort` a worker runs tasks through (claims, leases, fenced writes).
 * - `relay`: the store's notifications into this process, this process's progress out.
 */
export interface Guard {
  readonly context: GuardContext;
  readonly requestor: RequestorSurface;
  readonly answers: InputSurface;
  readonly worker: WorkerSurface;
  readonly relay: NotificationRelay;
}

/** The guard's parts over one store (see `Guard`). */
export function openGuard(options: GuardOptions): Guard {
  const context = new GuardContext(options);
  return {
    context,
    requestor: new RequestorSurface(context),
    answers: new InputSurface(context),
    worker: new WorkerSurface(context),
    relay: new NotificationRelay(context),
  };
}
