import { randomUUID } from 'node:crypto';
import { checkAppName, DEFAULT_APP } from '../core/app-name.js';
import { isTerminal, type Millis, type TaskCapabilities, type TaskRecord } from '../core/types.js';
import type { AuditEntry, TaskStore } from '../store/types.js';
import { AdmissionClaimers } from './admission-claims.js';
import { ChangeFeed } from './change-feed.js';
import { DEFAULT_LIMITS, type TaskLimits } from './limits.js';
import { claimEventOf, taskEndOf, TaskEvents, type DecisionEvent } from './task-events.js';
import { timedStore } from './timed-store.js';

export interface GuardOptions {
  store: TaskStore;
  /** The receiver's task capabilities, in the spec's server shape. */
  capabilities: TaskCapabilities;
  /** Epoch-ms clock; every decision takes its `now` from here. */
  clock?: () => Millis;
  limits?: Partial<TaskLimits>;
  /** Task id generator; cryptographically random UUIDs by default. */
  newTaskId?: () => string;
  /** Write read decisions (`tasks/get`, `tasks/result`, `tasks/list`) to the audit trail too. */
  auditReads?: boolean;
  /** The application admitting tasks here (a checked name; default `DEFAULT_APP`): stored with each task. */
  app?: string;
  /** The digest of a tool's definition (`toolDigest`), stored with each task of it; absent: none recorded. */
  toolDigest?: (toolName: string) => string | null;
}

/**
 * What every surface of the guard shares: the store (timed), the settings, the change feed and
 * the events, and the ways a decision is told (its audit line, its event, a task's end, a
 * claim). One per service; the surfaces hold it, never each other's state.
 */
export class GuardContext {
  /** The store behind the guard, each round trip reported on `events` (`timedStore`). */
  readonly store: TaskStore;
  readonly capabilities: TaskCapabilities;
  readonly limits: TaskLimits;
  readonly clock: () => Millis;
  readonly newTaskId: () => string;
  readonly app: string;
  readonly toolDigest: (toolName: string) => string | null;
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
    this.store = timedStore(options.store, this.events);
    this.capabilities = options.capabilities;
    this.clock = options.clock ?? Date.now;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.newTaskId = options.newTaskId ?? randomUUID;
    this.auditReads = options.auditReads ?? true;
    this.app = checkAppName(options.app ?? DEFAULT_APP);
    this.toolDigest = options.toolDigest ?? (() => null);
  }

  /** Tells the observers of a decision (the audit line says the same; see `events`). */
  decided(event: DecisionEvent): void {
    if (this.events.wants('decision')) this.events.emit('decision', event);
  }

  /** A terminal record this service wrote: one task-end event. */
  ended(record: TaskRecord, correlationId: string): void {
    if (this.events.wants('taskEnded') && isTerminal(record.status)) this.events.emit('taskEnded', taskEndOf(record, correlationId));
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
    return this.store.recordDecision(entry);
  }
}
