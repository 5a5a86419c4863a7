import type { TaskRecord } from '../core/types.js';
import type { GuardContext } from './guard-context.js';

/** Whether other processes' changes reach this one: `off` where the store has no notifications or `start` was not called. */
export type NotificationState = 'off' | 'up' | 'down';

/**
 * The store's cross-process notifications, relayed into this process's change feed (changes,
 * progress), and this process's progress handed to the store for the others. A notification
 * only wakes: whoever answers reads the store.
 */
export class NotificationRelay {
  private stopListening: (() => Promise<void>) | null = null;
  private current: NotificationState = 'off';

  constructor(private readonly ctx: GuardContext) {}

  /** Whether other processes' changes reach this one now. */
  get state(): NotificationState {
    return this.current;
  }

  /** Starts relaying the store's cross-process change notifications, where it has them. */
  async start(onError?: (error: Error) => void): Promise<void> {
    const { store, changes } = this.ctx;
    if (this.stopListening !== null || !store.supports.listenNotify) return;
    this.stopListening = await store.listen(
      (taskId, version, record) => {
        // null: the connection is back after a loss (see TaskUpkeep.listen).
        if (taskId !== null) return changes.publishRemote(taskId, version, record);
        this.current = 'up';
        changes.publishAll();
      },
      (error) => {
        this.current = 'down';
        onError?.(error);
      },
      (event) => changes.publishRemoteProgress(event),
      // Its own writes come back on the feed: those are neither reported nor their records opened.
      { knows: (taskId, version) => changes.knows(taskId, version) },
    );
    this.current = 'up';
  }

  async stop(): Promise<void> {
    const stop = this.stopListening;
    this.stopListening = null;
    this.current = 'off';
    await stop?.();
  }

  /**
   * A running task's progress, for requestors connected to other processes: handed to the
   * store's feed, best effort (see `TaskUpkeep.publishProgress`); this process's own listeners
   * hear it from the runtime directly. Never throws to the handler that reported it.
   */
  publishProgress(record: TaskRecord, progress: number, total?: number, message?: string): void {
    const { store, changes } = this.ctx;
    const { taskId, version } = record;
    const event = {
      taskId,
      version,
      progress,
      origin: changes.origin,
      ...(total === undefined ? {} : { total }),
      ...(message === undefined ? {} : { message }),
    };
    try {
      store.publishProgress(event);
    } catch (error) {
      store.onProblem?.('progress not published', { taskId, error: String(error) });
    }
  }

  /**
   * How long a waiter sleeps without an event: short where other processes may write without
   * notifying (a shared SQLite file), long where every writer notifies.
   */
  fallbackPollMs(): number {
    const notified = !this.ctx.store.supports.shared || this.stopListening !== null;
    return notified ? 30_000 : Math.min(this.ctx.limits.pollInterval, 500);
  }
}
