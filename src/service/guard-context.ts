import { performance } from 'node:perf_hooks';
import { checkAppName, DEFAULT_APP } from '../core/app-name.js';
import { isTerminal, type Millis, type TaskCapabilities, type TaskRecord } from '../core/types.js';
import type { AuditEntry, TaskStore } from '../store/types.js';
import { endStoreSpan, storeSpan } from '../trace/store-span.js';
import { AdmissionClaimers } from './admission-claims.js';
import { ChangeFeed } from './change-feed.js';
import { DEFAULT_LIMITS, type TaskLimits } from './limits.js';
import { claimEventOf, taskEndOf, TaskEvents, type DecisionEvent } from './task-events.js';
import { timeOrderedTaskId } from './task-ids.js';

/** The store's operations that are round trips (a promise back), by name: what `GuardContext.timed` reports. */
export type StoreOperation = {
  [K in keyof TaskStore]-?: NonNullable<TaskStore[K]> extends (...args: never[]) => Promise<unknown> ? K : never;
}[keyof TaskStore];

export interface GuardOptions {
  store: TaskStore;
  /** The receiver's task capabilities, in the spec's server shape. */
  capabilities: TaskCapabilities;
  /** Epoch-ms clock; every decision takes its `now` from here. */
  clock?: () => Millis;
  limits?: Partial<TaskLimits>;
  /** Task id generator; by default UUIDs of version 7, time first and 74 random bits (`timeOrderedTaskId`). */
  newTaskId?: () => string;
  /** Write read decisions (`tasks/get`, `tasks/result`, `tasks/list`) to the audit trail too. */
  auditReads?: boolean;
  /** The application admitting tasks here (a checked name; default `DEFAULT_APP`): stored with each task. */
  app?: string;
  /** The digest of a tool's definition (`toolDigest`), stored with each task of it; absent: none recorded. */
  toolDigest?: (toolName: string) => string | null;
  /** The version of a tool's code (`ToolRegistry.version`), stored with each task of it; absent: none recorded. */
  toolVersion?: (toolName: string) => string | null;
}

/**
 * What every surface of the guard shares: the store, the settings, the change feed and the
 * events, and the ways a decision is told (its audit line, its event, a task's end, a claim, a
 * store round trip). One per guard; the surfaces hold it, never each other's state.
 */
export class GuardContext {
  /**
   * The store behind the guard, as given. Each round trip is timed where it is made:
   * `ctx.timed('get', ctx.started(), ctx.store.get(...))` (see `timed`).
   */
  readonly store: TaskStore;
  readonly capabilities: TaskCapabilities;
  readonly limits: TaskLimits;
  readonly clock: () => Millis;
  readonly newTaskId: () => string;
  readonly app: string;
  readonly toolDigest: (toolName: string) => string | null;
  readonly toolVersion: (toolName: string) => string | null;
  /** Wakes waiters when a task changes; fed by the surfaces' writes and the store's notifications. */
  readonly changes = new ChangeFeed();
  /** Workers of this process that take an admitted task at once (see `AdmissionClaimers`). */
  readonly admissionClaims = new AdmissionClaimers();
  /**
   * Who hears every decision, task end, claim and store round trip (the logger, the metrics).
   * The decisions are the ones the audit trail holds, reported where they are made.
   */
  readonly events = new TaskEvents();
  private readonly auditReads: boolean;

  constructor(options: GuardOptions) {
    this.store = options.store;
    this.capabilities = options.capabilities;
    this.clock = options.clock ?? Date.now;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.newTaskId = options.newTaskId ?? timeOrderedTaskId;
    this.auditReads = options.auditReads ?? true;
    this.app = checkAppName(options.app ?? DEFAULT_APP);
    this.toolDigest = options.toolDigest ?? (() => null);
    this.toolVersion = options.toolVersion ?? (() => null);
  }

  /**
   * When a store round trip starts, for `timed`: the time now while someone observes store calls
   * (`storeCall`, the metrics' latency histogram), else -1 and no clock read.
   */
  started(): number {
    return this.events.wants('storeCall') ? performance.now() : -1;
  }

  /**
   * `call`, a round trip of the store's `operation` begun at `started`, reported on `events`
   * (`storeCall`: its duration, and whether it failed) when it settles; the same promise back.
   * Written at the call site as `ctx.timed('get', ctx.started(), ctx.store.get(input))`:
   * arguments are evaluated left to right, so the clock is read before the store is called.
   * Unobserved (`started` is -1) and untraced, it costs one comparison and one look at the active
   * context: no closure, no promise of its own (`tasks/get` passes here on every poll).
   */
  timed<T>(operation: StoreOperation, started: number, call: Promise<T>): Promise<T> {
    // A child span of the active one when a tracer records it (`storeSpan`).
    const span = storeSpan(operation);
    if (started < 0 && span === null) return call;
    const { events } = this;
    void call.then(
      () => {
        if (started >= 0) events.emit('storeCall', operation, performance.now() - started, false);
        if (span !== null) endStoreSpan(span);
      },
      (error: unknown) => {
        if (started >= 0) events.emit('storeCall', operation, performance.now() - started, true);
        if (span !== null) endStoreSpan(span, error);
      },
    );
    return call;
  }

  /** Tells the observers of a decision (the audit line says the same; see `events`). */
  decided(event: DecisionEvent): void {
    if (this.events.wants('decision')) this.events.emit('decision', event);
  }

  /** A terminal record this service wrote: one task-end event. */
  ended(record: TaskRecord, correlationId: string): void {
    if (this.events.wants('taskEnded') && isTerminal(record.status)) this.events.emit('taskEnded', taskEndOf(record, correlationId));
    if (record.parentTaskId !== undefined && isTerminal(record.status)) void this.wakeParent(record.taskId);
  }

  /**
   * A child's end makes its parent, waiting without a run, due at once (`TaskChildren.wakeParent`),
   * right after the child's terminal write; published, so an idle worker here claims it now. Best
   * effort: a wake lost (a crash, the store down) is covered by the parent's recheck (child-rules.ts).
   */
  async wakeParent(childTaskId: string): Promise<void> {
    try {
      const woken = await this.timed('wakeParent', this.started(), this.store.wakeParent({ taskId: childTaskId, now: this.clock() }));
      if (woken !== null) this.changes.publish(woken);
    } catch {
      // The parent's recheck covers it.
    }
  }

  /** A claim by `owner` (from the outbox, or made with the admission): published, decided, told. */
  claimed(record: TaskRecord, correlationId: string, owner: string, now: Millis): void {
    this.changes.publish(record.taskId, record.version, record);
    const { authKey, taskId, status } = record;
    this.decided({ surface: 'transition', decision: 'APPLY_TRANSITION', authKey, taskId, correlationId, status, detail: `claim ${owner}` });
    this.events.emit('claimed', claimEventOf(record, now));
  }

  /**
   * A decision made outside a store write, to the audit trail; reads only when `auditReads`.
   * The store's own promise, not one more async frame around it: every poll passes here.
   */
  audit(entry: AuditEntry, isRead = false): Promise<void> {
    if (isRead && !this.auditReads) return Promise.resolve();
    return this.timed('recordDecision', this.started(), this.store.recordDecision(entry));
  }
}
