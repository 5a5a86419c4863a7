import { EventEmitter } from 'node:events';

/**
 * Wakes whoever waits on a task when its record changes: in-process for this process's own
 * writes, and fed by the store's cross-process notifications where the store has them
 * (PostgreSQL LISTEN/NOTIFY). A waiter always re-reads the store: an event says "look again",
 * never what the record now is.
 */
// A symbol cannot collide with a task id.
const ANY = Symbol('any task');

export class ChangeFeed {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per waiting request; the count is bounded by open requests, not a leak.
    this.emitter.setMaxListeners(0);
  }

  /** `version` is the record's version after the change, where the writer said. */
  publish(taskId: string, version?: number): void {
    this.emitter.emit(taskId, version);
    this.emitter.emit(ANY, taskId, version);
  }

  /** Wakes every watcher: changes may have been missed (a lost notification connection). */
  publishAll(): void {
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  /**
   * Calls `listener` on every change of any task (idle workers), with the task and its version
   * after the change where the writer said; with no task when every task may have changed.
   */
  subscribeAll(listener: (taskId?: string, version?: number) => void): () => void {
    this.emitter.on(ANY, listener);
    return () => this.emitter.off(ANY, listener);
  }

  subscribe(taskId: string, listener: (version: number | undefined) => void): () => void {
    this.emitter.on(taskId, listener);
    return () => this.emitter.off(taskId, listener);
  }

  /**
   * Starts watching `taskId` now, so that a change between the caller's read and its wait is not
   * missed: `changed()` resolves at once if anything happened since the watch (or the previous
   * `changed()`) began, else on the next change, after `timeoutMs`, or when `signal` aborts.
   */
  watch(taskId: string): TaskWatch {
    let pending = false;
    let wake: (() => void) | null = null;
    const unsubscribe = this.subscribe(taskId, () => {
      pending = true;
      wake?.();
    });
    return {
      changed: (timeoutMs, signal) =>
        new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            wake = null;
            pending = false;
            resolve();
          };
          const timer = setTimeout(done, timeoutMs);
          wake = done;
          if (pending || signal?.aborted === true) done();
          else signal?.addEventListener('abort', done, { once: true });
        }),
      close: unsubscribe,
    };
  }
}

export interface TaskWatch {
  changed(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  close(): void;
}
