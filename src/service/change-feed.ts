import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { isTerminal, type TaskRecord } from '../core/types.js';
import type { ProgressEvent } from '../store/types.js';

/**
 * Wakes whoever waits on a task when its record changes: in-process for this process's own
 * writes, and fed by the store's cross-process notifications where the store has them
 * (PostgreSQL LISTEN/NOTIFY). A change this process made carries the record it wrote (that
 * commit's outcome), which a waiter may decide from, and so does another process's change that
 * made the task terminal, where the store brought its record (final: no later write changes
 * it); any other change only says "look again": whoever answers then reads the store.
 */
// A symbol cannot collide with a task id.
const ANY = Symbol('any task');

/** How many of this process's own latest versions the feed remembers to recognise their echo. */
const REMEMBERED = 4096;

export class ChangeFeed {
  private readonly emitter = new EventEmitter();
  /** The latest version this process published per task (most recent last), for `publishRemote`. */
  private readonly published = new Map<string, number>();
  /** Who hears other processes' progress (`publishRemoteProgress`). */
  private readonly progressListeners = new Set<(event: ProgressEvent) => void>();
  /** This process's id on the store's progress feed (`ProgressEvent.origin`): its own progress coming back is dropped. */
  readonly origin: string = randomUUID();

  constructor() {
    // One listener per waiting request; the count is bounded by open requests, not a leak.
    this.emitter.setMaxListeners(0);
  }

  /** Listeners of single tasks (waiting results, status watches, subscriptions): what an abandoned wait must give back. */
  get watchers(): number {
    return this.emitter.eventNames().reduce((sum, name) => sum + (name === ANY ? 0 : this.emitter.listenerCount(name)), 0);
  }

  /**
   * A change this process committed: `version` is the record's version after it, where the
   * writer said, and `record` the record the write returned, where it returned one.
   */
  publish(taskId: string, version?: number, record?: TaskRecord): void {
    if (version !== undefined) this.remember(taskId, version);
    this.emit(taskId, version, record !== undefined && record.taskId === taskId && record.version === version ? record : undefined);
  }

  /**
   * A change another connection reported (the store's cross-process notifications, which bring
   * this process's own writes back too). A version this process has published already is its
   * own write coming back: every watcher here has had it, so it is not published again (and does
   * not send each waiter and idle worker to the store once more). Only this process's own writes
   * are remembered: versions only grow, and the one write that leaves a version as it was (a
   * lease given back) can only come from the lease's holder, the process that claimed at it.
   * `record` is passed on only when it is that change's terminal record.
   */
  publishRemote(taskId: string, version?: number, record?: TaskRecord): void {
    if (version !== undefined && this.knows(taskId, version)) return;
    const final = record !== undefined && record.taskId === taskId && record.version === version && isTerminal(record.status);
    this.emit(taskId, version, final ? record : undefined);
  }

  /** Whether this process published `version` of `taskId`, or a later one: its own write, when it comes back (`publishRemote`). */
  knows(taskId: string, version: number): boolean {
    const known = this.published.get(taskId);
    return known !== undefined && version <= known;
  }

  private emit(taskId: string, version: number | undefined, record?: TaskRecord): void {
    this.emitter.emit(taskId, version, record);
    this.emitter.emit(ANY, taskId, version, record);
  }

  private remember(taskId: string, version: number): void {
    const known = this.published.get(taskId);
    if (known !== undefined && known >= version) return;
    this.published.delete(taskId);
    this.published.set(taskId, version);
    if (this.published.size > REMEMBERED) {
      const oldest = this.published.keys().next();
      if (oldest.done !== true) this.published.delete(oldest.value);
    }
  }

  /**
   * Progress as the store's feed brought it. Another process's run reported it: relayed to the
   * listeners. This process's own comes back too and is dropped: the runtime that ran the task
   * delivered it already, and it must not reach a requestor twice. Not a change: no watcher
   * wakes.
   */
  publishRemoteProgress(event: ProgressEvent): void {
    if (event.origin === this.origin) return;
    for (const listener of this.progressListeners) listener(event);
  }

  /** Calls `listener` with every progress `publishRemoteProgress` relays; returns the function that stops it. */
  subscribeProgress(listener: (event: ProgressEvent) => void): () => void {
    this.progressListeners.add(listener);
    return () => this.progressListeners.delete(listener);
  }

  /** Wakes every watcher: changes may have been missed (a lost notification connection). */
  publishAll(): void {
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  /**
   * Calls `listener` on every change of any task (idle workers), with the task and its version
   * after the change where the writer said, and its record where the change carried one (as
   * `subscribe` gives it); with no task when every task may have changed.
   */
  subscribeAll(listener: (taskId?: string, version?: number, record?: TaskRecord) => void): () => void {
    this.emitter.on(ANY, listener);
    return () => this.emitter.off(ANY, listener);
  }

  /** Whether anyone here waits on `taskId` now (`subscribe`, `watch`). */
  watched(taskId: string): boolean {
    return this.emitter.listenerCount(taskId) > 0;
  }

  /** `record` is given for a change this process made, as its write returned it. */
  subscribe(taskId: string, listener: (version: number | undefined, record?: TaskRecord) => void): () => void {
    this.emitter.on(taskId, listener);
    return () => this.emitter.off(taskId, listener);
  }

  /**
   * Starts watching `taskId` now, so that a change between the caller's read and its wait is not
   * missed: `changed()` resolves at once if anything happened since the watch (or the previous
   * `changed()`) began, else on the next change, after `timeoutMs`, or when `signal` aborts.
   * It resolves with the record of the latest change when every change since then carried one,
   * or when a change carried a terminal record (final: whatever else changed came before it);
   * with null otherwise (a change without its record, a timeout, an abort), when only the store
   * can say what the record is now.
   */
  watch(taskId: string): TaskWatch {
    let pending = false;
    // Some change came without a record: a newer commit may exist than any record carried.
    let unknown = false;
    let carried: TaskRecord | null = null;
    let wake: (() => void) | null = null;
    const unsubscribe = this.subscribe(taskId, (_version, record) => {
      pending = true;
      if (record === undefined) unknown = true;
      else if (carried === null || record.version > carried.version) carried = record;
      wake?.();
    });
    return {
      changed: (timeoutMs, signal) =>
        new Promise<TaskRecord | null>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            const final = carried !== null && isTerminal(carried.status);
            const record = pending && (final || !unknown) && signal?.aborted !== true ? carried : null;
            wake = null;
            pending = false;
            unknown = false;
            carried = null;
            resolve(record);
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
  /** The record of the latest change when the carried records say all there is; else null (see `watch`). */
  changed(timeoutMs: number, signal?: AbortSignal): Promise<TaskRecord | null>;
  close(): void;
}
