import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import { visibleTo } from '../core/visibility.js';
import type { TaskRecord } from '../core/types.js';
import type { TaskLimits } from '../service/limits.js';
import type { Guard } from '../service/guard.js';
import { outlast } from '../runtime/requestor-reads.js';
import { isStoreFault } from '../core/errors.js';
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
 * Which of the named ids a listen accepts: the caller's own, visible tasks (any other id is left
 * out exactly like an unknown one). One store read, however many are named, run through a store
 * outage shorter than `limits.storeOutageMs`; past it the store's error is thrown, before the
 * stream opens, and the wire answers the retryable `Store unavailable` (503): a store fault is
 * never acknowledged as "none of these are yours".
 */
export async function acceptedTaskIds(
  guard: Pick<Guard, 'context' | 'requestor'>,
  auth: string,
  taskIds: readonly string[],
  signal?: AbortSignal,
): Promise<string[]> {
  const named = [...new Set(taskIds)];
  if (named.length === 0) return [];
  const { context } = guard;
  const found = await outlast(
    context,
    () => context.timed('visibleTaskIds', context.started(), context.store.visibleTaskIds({ authKey: auth, taskIds: named, now: context.clock() })),
    signal,
  );
  const visible = new Set(found);
  const accepted = named.filter((taskId) => visible.has(taskId));
  if (accepted.length < named.length) await auditUnseen(guard, auth, named, visible);
  return accepted;
}

/**
 * `subscriptions/listen` for tasks, on the ids `acceptedTaskIds` accepted: the acknowledgement
 * names them, then the current state of each, then `notifications/tasks` with what `tasks/get`
 * would answer on every change, from whichever process writes it (the service's change feed
 * hears the store's notifications). A stream whose client went away reads nothing more. A read
 * the store cannot answer is tried again through an outage shorter than `limits.storeOutageMs`;
 * past it the stream ends with the retryable `Store unavailable` error as the listen's response,
 * never with a silence the client would take for "nothing changed". Resolves when the stream ends.
 */
export async function openTaskSubscription(input: {
  guard: Pick<Guard, 'context' | 'worker'>;
  auth: string;
  accepted: readonly string[];
  subscriptionId: string | number;
  sink: EventSink;
  closed: AbortSignal;
}): Promise<void> {
  const { guard, auth, sink, accepted } = input;
  const { context } = guard;
  const tagged = { [META_KEYS.subscriptionId]: input.subscriptionId };
  if (input.closed.aborted) return;
  // Aborted when the client goes or the store stays away past the bound: the stream ends.
  const ending = new AbortController();
  const closed = AbortSignal.any([input.closed, ending.signal]);
  /** The version each task was last sent at: notifications never repeat or go back. */
  const sent = new Map<string, number>();
  const look = async (taskId: string, carried?: TaskRecord) => {
    // A stream that ended reads nothing more.
    if (closed.aborted) return;
    // A change this process wrote carries its record: no read for it (the caller's own, unexpired).
    const own = carried !== undefined && visibleTo(carried, auth, context.clock());
    let record: TaskRecord | null;
    try {
      record = own ? carried : (await outlast(context, () => guard.worker.lookup({ auth, taskId }), closed)).record;
    } catch (error) {
      if (closed.aborted) return;
      if (!isStoreFault(error)) throw error;
      sink.send({ jsonrpc: '2.0', id: input.subscriptionId, error: storeUnavailable().toJSON() });
      ending.abort();
      return;
    }
    if (record === null || closed.aborted || (sent.get(taskId) ?? 0) >= record.version) return;
    sent.set(taskId, record.version);
    const { resultType: _resultType, ...task } = detailedTask(record);
    sink.send({ jsonrpc: '2.0', method: 'notifications/tasks', params: Object.assign({}, task, { _meta: tagged }) });
  };
  // Watch before the first read: a change between the two is then not lost.
  const unsubscribes = accepted.map((taskId) => {
    let reading: Promise<void> = Promise.resolve();
    return context.changes.subscribe(taskId, (version, record) => {
      if (version !== undefined && version <= (sent.get(taskId) ?? 0)) return;
      // One read at a time per task, in order.
      reading = reading.then(() => look(taskId, record)).catch(() => undefined);
    });
  });
  const keepAlive = setInterval(() => sink.comment(), KEEP_ALIVE_MS);
  keepAlive.unref();
  context.events.emit('waiting', 'subscription', 1);
  try {
    sink.send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: accepted }, _meta: tagged } });
    // The state each task is in now, so that a change just before the listen is not missed.
    for (const taskId of accepted) {
      if (closed.aborted) break;
      await look(taskId);
    }
    await new Promise<void>((resolve) => (closed.aborted ? resolve() : closed.addEventListener('abort', () => resolve(), { once: true })));
  } finally {
    clearInterval(keepAlive);
    for (const stop of unsubscribes) stop();
    context.events.emit('waiting', 'subscription', -1);
  }
}

/**
 * A listen that named ids the caller may not see: one count in the aggregated audit per listen
 * (not per id: a listen of a hundred guesses is one line, as a hundred polls of one miss are).
 * The one read that said which ids are the caller's does not say why the others are not, so the
 * miss is `NOT_FOUND` (unknown, another caller's or expired alike), naming the first of them.
 */
async function auditUnseen(guard: Pick<Guard, 'requestor'>, auth: string, named: readonly string[], visible: ReadonlySet<string>): Promise<void> {
  const unseen = named.filter((taskId) => !visible.has(taskId));
  await guard.requestor.recordDecision({
    surface: 'read',
    decision: 'NOT_FOUND',
    auth,
    taskId: unseen[0] ?? null,
    detail: `subscriptions/listen: ${unseen.length} of ${named.length} task ids not visible to the caller`,
    read: true,
  });
}
