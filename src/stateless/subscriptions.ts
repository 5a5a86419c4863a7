import { visibleTo } from '../core/read-rules.js';
import type { TaskRecord } from '../core/types.js';
import type { TaskService } from '../service/task-service.js';
import { META } from './protocol.js';
import { detailedTask } from './task-view.js';

/** Where a subscription's messages go: SSE events and keep-alive comments on one response. */
export interface EventSink {
  send(message: unknown): void;
  comment(text?: string): void;
}

/** How often an idle stream says it is alive, so that proxies do not close it. */
const KEEP_ALIVE_MS = 15_000;

/**
 * `subscriptions/listen` for tasks: the acknowledgement names the ids accepted (the caller's
 * own, visible tasks; any other id is left out exactly like an unknown one), then the current
 * state of each, then `notifications/tasks` with what `tasks/get` would answer on every change,
 * from whichever process writes it (the service's change feed hears the store's
 * notifications). Resolves when the client closes the stream.
 */
export async function openTaskSubscription(input: {
  service: TaskService;
  auth: string;
  taskIds: readonly string[];
  subscriptionId: string | number;
  sink: EventSink;
  closed: AbortSignal;
}): Promise<void> {
  const { service, auth, sink, closed } = input;
  const tagged = { [META.subscriptionId]: input.subscriptionId };
  const visible = await Promise.all(
    [...new Set(input.taskIds)].map(async (taskId) => ((await service.lookup({ auth, taskId }).catch(() => null))?.record ? taskId : null)),
  );
  const accepted = visible.filter((taskId): taskId is string => taskId !== null);
  /** The version each task was last sent at: notifications never repeat or go back. */
  const sent = new Map<string, number>();
  const look = async (taskId: string, carried?: TaskRecord) => {
    // A stream its client closed reads nothing more.
    if (closed.aborted) return;
    // A change this process wrote carries its record: no read for it (the caller's own, unexpired).
    const own = carried !== undefined && visibleTo(carried, auth, service.now());
    const record = own ? carried : ((await service.lookup({ auth, taskId }).catch(() => null))?.record ?? null);
    if (record === null || closed.aborted || (sent.get(taskId) ?? 0) >= record.version) return;
    sent.set(taskId, record.version);
    const { resultType: _resultType, ...task } = detailedTask(record);
    sink.send({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: tagged } });
  };
  // Watch before the first read: a change between the two is then not lost.
  const unsubscribes = accepted.map((taskId) => {
    let reading: Promise<void> = Promise.resolve();
    return service.changes.subscribe(taskId, (version, record) => {
      if (version !== undefined && version <= (sent.get(taskId) ?? 0)) return;
      // One read at a time per task, in order.
      reading = reading.then(() => look(taskId, record));
    });
  });
  const keepAlive = setInterval(() => sink.comment(), KEEP_ALIVE_MS);
  keepAlive.unref();
  service.events.emit('waiting', 'subscription', 1);
  try {
    sink.send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: accepted }, _meta: tagged } });
    // The state each task is in now, so that a change just before the listen is not missed.
    for (const taskId of accepted) await look(taskId);
    await new Promise<void>((resolve) => (closed.aborted ? resolve() : closed.addEventListener('abort', () => resolve(), { once: true })));
  } finally {
    clearInterval(keepAlive);
    for (const stop of unsubscribes) stop();
    service.events.emit('waiting', 'subscription', -1);
  }
}
