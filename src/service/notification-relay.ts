import { coerceError } from '../core/errors.js';
import type { TaskRecord } from '../core/types.js';
import type { GuardContext } from './guard-context.js';

/** The first wait before a listener that could not start is started again, doubled up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;

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
  /** Between `start` and `stop`: a listener is up, or being started again. */
  private running = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private onError: ((error: Error) => void) | null = null;

  constructor(private readonly ctx: GuardContext) {}

  /** Whether other processes' changes reach this one now. */
  get state(): NotificationState {
    return this.current;
  }

  /**
   * Starts relaying the store's cross-process change notifications, where it has them. A
   * listener that cannot start (the database dropped the connection as the process started) does
   * not fail the start: the state is `down`, `onError` hears why, waiters poll at the short
   * interval (`fallbackPollMs`), and the listener is started again with backoff until it is up
   * or `stop` is called; once up, every waiter looks again (anything may have changed meanwhile).
   */
  async start(onError?: (error: Error) => void): Promise<void> {
    if (this.running || !this.ctx.store.supports.listenNotify) return;
    this.running = true;
    this.onError = onError ?? null;
    try {
      await this.listen();
    } catch (error) {
      this.lost(error as Error);
      this.retry(FIRST_RETRY_MS);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const stop = this.stopListening;
    this.stopListening = null;
    this.current = 'off';
    await stop?.();
  }

  private async listen(): Promise<void> {
    const { store, changes } = this.ctx;
    const stop = await store.listen(
      (taskId, version, record) => {
        // null: the connection is back after a loss (see TaskUpkeep.listen).
        if (taskId !== null) return changes.publishRemote(taskId, version, record);
        this.current = 'up';
        changes.publishAll();
      },
      (error) => this.lost(error),
      (event) => changes.publishRemoteProgress(event),
      // Its own writes come back on the feed: those are neither reported nor their records opened.
      // A task waited for here ends without its record travelling (ListenOptions.waitedHere).
      { knows: (taskId, version) => changes.knows(taskId, version), waitedHere: (taskId) => changes.watched(taskId) },
    );
    // Stopped while the listener was starting: it goes at once.
    if (!this.running) return stop();
    this.stopListening = stop;
    this.current = 'up';
  }

  private lost(error: Error): void {
    this.current = 'down';
    this.onError?.(error);
  }

  private retry(delayMs: number): void {
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.running) return;
      this.listen().then(
        // Changes made while no listener was up were not heard: every waiter looks again.
        () => this.ctx.changes.publishAll(),
        (error: unknown) => {
          this.lost(error as Error);
          this.retry(Math.min(delayMs * 2, MAX_RETRY_MS));
        },
      );
    }, delayMs);
    this.retryTimer.unref();
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
      store.onProblem?.('progress not published', { taskId, reason: coerceError(error).message });
    }
  }

  /**
   * How long a waiter sleeps without an event: short where other processes may write without
   * notifying (a shared SQLite file), long where every writer notifies.
   */
  fallbackPollMs(): number {
    // While the listener is down, other processes' writes go unheard: poll at the short interval.
    const notified = !this.ctx.store.supports.shared || (this.stopListening !== null && this.current !== 'down');
    return notified ? 30_000 : Math.min(this.ctx.limits.pollInterval, 500);
  }
}
