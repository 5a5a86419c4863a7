import { isStoreFault } from '../../core/errors.js';
import { isTerminal, type TaskRecord } from '../../core/types.js';
import { visibleTo } from '../../core/visibility.js';
import { rideThrough } from '../../service/ride-through.js';
import type { RequestHost } from './host.js';

/**
 * Which of the named ids a watch may follow: the caller's own, visible tasks (any other id is left
 * out exactly like an unknown one). One store read, however many are named, through a store
 * outage shorter than `limits.storeOutageMs`; past it the store's error is thrown before anything
 * is acknowledged (a store fault is never "none of these are yours"). Ids left out are audited
 * once per request (not per id: a hundred guesses are one line, as a hundred polls of one miss
 * are); the one read does not say why an id is not the caller's, so the miss is `NOT_FOUND`.
 */
export async function acceptWatch(
  host: Pick<RequestHost, 'guard'>,
  request: { auth: string; taskIds: readonly string[]; via: string; signal?: AbortSignal },
): Promise<{ accepted: string[] }> {
  const named = [...new Set(request.taskIds)];
  if (named.length === 0) return { accepted: [] };
  const { context, requestor } = host.guard;
  const found = await rideThrough(
    () => context.timed('visibleTaskIds', context.started(), context.store.visibleTaskIds({ authKey: request.auth, taskIds: named, now: context.clock() })),
    context.limits.storeOutageMs,
    request.signal,
  );
  const visible = new Set(found);
  const accepted = named.filter((taskId) => visible.has(taskId));
  const unseen = named.filter((taskId) => !visible.has(taskId));
  if (unseen.length > 0) {
    await requestor.recordDecision({
      surface: 'read',
      decision: 'NOT_FOUND',
      auth: request.auth,
      taskId: unseen[0] ?? null,
      detail: `${request.via}: ${unseen.length} of ${named.length} task ids not visible to the caller`,
      read: true,
    });
  }
  return { accepted };
}

/** A watch of the caller's tasks (see `watchTasks`). */
export interface TaskWatch {
  readNow(): Promise<void>;
  stop(): void;
}

export interface WatchTasksRequest {
  auth: string;
  /** The caller's tasks to follow (a subscription's accepted ids, or the one task a session created). */
  taskIds: readonly string[];
  /** The version the watcher already has of each task (default: none): only later ones are news. */
  seen?: number;
  /**
   * Ends the watch: nothing more is read. Without one, the watch ends with `stop()` or when every
   * watched task has ended (a watch per task call need not make an AbortSignal, which costs an
   * event target to make and an exception to abort).
   */
  signal?: AbortSignal;
  /** A newer version of a watched task: what `tasks/get` would read now. Never twice for one version, never an older one. */
  onRecord(record: TaskRecord): void | Promise<void>;
  /** A read met a store that stayed away past `limits.storeOutageMs`; the watch goes on unless the caller ends it. */
  onUnavailable?(): void;
  /** Every watched task ended or went out of reach: nothing more can come. */
  onDone?(): void;
  /** Counted as an open subscription on the guard's `waiting` events. */
  subscription?: boolean;
}

/**
 * Follows the caller's tasks through the change feed, which hears this process's writes and the
 * store's notifications from every other: each change is read again (notify, then re-read), one
 * read at a time per task, in order, through a short store outage. A change this process wrote
 * carries its record, which is used as it is when it is the caller's and unexpired. A task that
 * ended (terminal is final) or went out of reach is followed no further. Watching starts before
 * any first read, so a change between the two is not lost. `readNow()` reads each task's state
 * at once (a subscription's first notifications; without it the first news is the next change);
 * `stop()` ends the watch, as the signal does.
 */
export function watchTasks(host: Pick<RequestHost, 'guard'>, request: WatchTasksRequest): TaskWatch {
  const { context } = host.guard;
  const { auth, signal } = request;
  let stopped = false;
  const ended = () => stopped || signal?.aborted === true;
  // Without the caller's signal, what cuts a read's ride through an outage short at `stop()`:
  // made by the first read, which a watch of this process's own writes never needs.
  let reads: AbortController | null = null;
  const readSignal = () => signal ?? (reads ??= new AbortController()).signal;
  const sent = new Map<string, number>();
  const open = new Map<string, () => void>();
  const finish = (taskId: string) => {
    open.get(taskId)?.();
    if (open.delete(taskId) && open.size === 0) request.onDone?.();
  };
  const look = async (taskId: string, carried?: TaskRecord) => {
    if (ended() || !open.has(taskId)) return;
    const own = carried !== undefined && visibleTo(carried, auth, context.clock());
    let record: TaskRecord | null;
    try {
      record = own ? carried : (await rideThrough(() => host.guard.worker.lookup({ auth, taskId }), context.limits.storeOutageMs, readSignal())).record;
    } catch (error) {
      if (ended()) return;
      if (!isStoreFault(error)) throw error;
      request.onUnavailable?.();
      return;
    }
    if (ended()) return;
    if (record === null) return finish(taskId);
    if ((sent.get(taskId) ?? request.seen ?? 0) >= record.version) return;
    sent.set(taskId, record.version);
    await request.onRecord(record);
    if (isTerminal(record.status)) finish(taskId);
  };
  for (const taskId of new Set(request.taskIds)) {
    let reading: Promise<void> = Promise.resolve();
    open.set(
      taskId,
      context.changes.subscribe(taskId, (version, record) => {
        if (version !== undefined && version <= (sent.get(taskId) ?? request.seen ?? 0)) return;
        reading = reading.then(() => look(taskId, record)).catch(() => undefined);
      }),
    );
  }
  if (request.subscription === true) context.events.emit('waiting', 'subscription', 1);
  const stop = () => {
    if (stopped) return;
    stopped = true;
    reads?.abort();
    for (const unsubscribe of open.values()) unsubscribe();
    open.clear();
    if (request.subscription === true) context.events.emit('waiting', 'subscription', -1);
  };
  if (signal?.aborted === true) stop();
  else signal?.addEventListener('abort', stop, { once: true });
  const readNow = async () => {
    for (const taskId of [...open.keys()]) {
      if (ended()) break;
      await look(taskId);
    }
  };
  return { readNow, stop };
}
