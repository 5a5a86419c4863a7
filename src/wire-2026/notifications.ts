import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import type { RequestHost, TaskLimits } from '../runtime/requests/host.js';
import { watchTasks } from '../runtime/requests/watch-tasks.js';
import { ProtocolError, storeUnavailable } from '../tools/protocol-error.js';
import { detailedTask } from '../tools/task-views.js';

/** Where a subscription's messages go: SSE events and keep-alive comments on one response. */
export interface EventSink {
  send(message: unknown): void;
  comment(text?: string): void;
}

/** How often an idle stream says it is alive, so that proxies do not close it. */
const KEEP_ALIVE_MS = 15_000;

/** A listen refused for lack of room: 429 (this caller's cap) or 503 (the server's), with `Retry-After`. */
export class SubscriptionsFull extends ProtocolError {
  constructor(
    message: string,
    readonly status: 429 | 503,
    readonly retryAfterSeconds: number,
  ) {
    super(JSON_RPC_CODES.tooManyTasks, message);
  }
}

/**
 * The open subscriptions of one server, in all and per caller. A slot is taken before anything
 * is read for a listen and given back once when its stream ends (or is never opened).
 */
export class SubscriptionSlots {
  private total = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(private readonly limits: Pick<TaskLimits, 'maxSubscriptions' | 'maxSubscriptionsPerCaller'>) {}

  /** Takes a slot for `auth`, or throws `SubscriptionsFull`; returns the slot's release. */
  take(auth: string): () => void {
    const mine = this.byCaller.get(auth) ?? 0;
    if (mine >= this.limits.maxSubscriptionsPerCaller) {
      throw new SubscriptionsFull(`Too many open subscriptions for this caller: at most ${this.limits.maxSubscriptionsPerCaller}; close one first`, 429, 5);
    }
    if (this.total >= this.limits.maxSubscriptions) {
      throw new SubscriptionsFull(`Too many open subscriptions: at most ${this.limits.maxSubscriptions}; retry later`, 503, 30);
    }
    this.total += 1;
    this.byCaller.set(auth, mine + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.total -= 1;
      const left = (this.byCaller.get(auth) ?? 1) - 1;
      if (left > 0) this.byCaller.set(auth, left);
      else this.byCaller.delete(auth);
    };
  }

  /** Open subscriptions in all. */
  get open(): number {
    return this.total;
  }
}

/**
 * `subscriptions/listen` for tasks, on the ids the request layer accepted (`acceptWatch`): the
 * acknowledgement names them, then the current state of each, then `notifications/tasks` with
 * what `tasks/get` would answer on every change, from whichever process writes it (the request
 * layer's `watchTasks`). A read the store cannot answer within `limits.storeOutageMs` ends the
 * stream with the retryable `Store unavailable` error as the listen's response, never with a
 * silence the client would take for "nothing changed". Resolves when the stream ends.
 */
export async function openTaskSubscription(input: {
  host: Pick<RequestHost, 'guard'>;
  auth: string;
  accepted: readonly string[];
  subscriptionId: string | number;
  sink: EventSink;
  closed: AbortSignal;
}): Promise<void> {
  const { sink, accepted } = input;
  const tagged = { [META_KEYS.subscriptionId]: input.subscriptionId };
  if (input.closed.aborted) return;
  // Aborted when the client goes or the store stays away past the bound: the stream ends.
  const ending = new AbortController();
  const closed = AbortSignal.any([input.closed, ending.signal]);
  const keepAlive = setInterval(() => sink.comment(), KEEP_ALIVE_MS);
  keepAlive.unref();
  // Watching starts before the acknowledgement and the first reads: a change between them is not lost.
  const watch = watchTasks(input.host, {
    auth: input.auth,
    taskIds: accepted,
    signal: closed,
    subscription: true,
    onRecord: (record) => {
      const { resultType: _resultType, ...task } = detailedTask(record);
      sink.send({ jsonrpc: '2.0', method: 'notifications/tasks', params: Object.assign({}, task, { _meta: tagged }) });
    },
    onUnavailable: () => {
      if (closed.aborted) return;
      sink.send({ jsonrpc: '2.0', id: input.subscriptionId, error: storeUnavailable().toJSON() });
      ending.abort();
    },
  });
  try {
    sink.send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: accepted }, _meta: tagged } });
    // The state each task is in now, so that a change just before the listen is not missed.
    await watch.readNow();
    await new Promise<void>((resolve) => (closed.aborted ? resolve() : closed.addEventListener('abort', () => resolve(), { once: true })));
  } finally {
    clearInterval(keepAlive);
    watch.stop();
  }
}
