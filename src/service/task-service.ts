import type { StoredInput } from '../core/input-rules.js';
import type { StepRecord } from '../core/step-rules.js';
import type { Millis, StatusWrite, TaskCapabilities, TaskRecord } from '../core/types.js';
import type {
  AnswerOutcome,
  AskOutcome,
  Fence,
  InputsOutcome,
  LookupOutcome,
  OverdueOutcome,
  RecordStepOutcome,
  StoreCapabilities,
  TaskStore,
  TransitionOutcome,
} from '../store/types.js';
import type { AdmissionClaimers } from './admission-claims.js';
import type { ChangeFeed } from './change-feed.js';
import type { GuardContext, GuardOptions } from './guard-context.js';
import { openGuard, type Guard } from './guard.js';
import type { InputSurface } from './input-surface.js';
import type { TaskLimits } from './limits.js';
import type { NotificationRelay, NotificationState } from './notification-relay.js';
import type { CancelTaskOutcome, ListOutcome, QuietIf, ReadOnlyMethod, ReadOutcome } from './outcomes.js';
import type { RecordDecisionInput, RequestorSurface } from './requestor-surface.js';
import { awaitResult, type AwaitResultInput } from './result-wait.js';
import { rideThrough } from './ride-through.js';
import type { TaskEvents } from './task-events.js';
import type { AskRequest, ClaimRequest, RecordStepRequest, WorkerPort } from './worker-port.js';
import type { WorkerSurface } from './worker-surface.js';

export type { GuardOptions as TaskServiceOptions } from './guard-context.js';
export type { CancelTaskOutcome, CreateOutcome, ListOutcome, ReadOutcome } from './outcomes.js';

/**
 * The guard in front of a store: applies the request-only rules (capabilities, taskSupport),
 * hands everything that depends on stored facts to the store's atomic operations, and writes
 * every decision to the audit trail. Protocol adapters, workers and the replay all go through
 * here, and every write that changes a record is published on `changes`.
 *
 * One object over four surfaces that share a `GuardContext`: the requestor's (`read`,
 * `awaitResult`, `cancel`, `list`: `RequestorSurface`, `result-wait.ts`), the worker's
 * (`WorkerPort`: `WorkerSurface`), the answers to a task's questions (`InputSurface`) and the
 * store's notifications (`NotificationRelay`).
 */
export class TaskService implements WorkerPort {
  private readonly ctx: GuardContext;
  private readonly requests: RequestorSurface;
  private readonly writes: WorkerSurface;
  private readonly answers: InputSurface;
  private readonly relay: NotificationRelay;

  /** The guard's parts, by caller (see `Guard`). */
  readonly guard: Guard;

  constructor(options: GuardOptions) {
    this.guard = openGuard(options);
    this.ctx = this.guard.context;
    this.requests = this.guard.requestor;
    this.writes = this.guard.worker;
    this.answers = this.guard.answers;
    this.relay = this.guard.relay;
  }

  /** The store behind the guard: for composition (sweeper, closing), never for task writes. */
  get store(): TaskStore {
    return this.ctx.store;
  }

  get capabilities(): TaskCapabilities {
    return this.ctx.capabilities;
  }

  get limits(): TaskLimits {
    return this.ctx.limits;
  }

  /** The app every admission of this service records (`GuardOptions.app`). */
  get app(): string {
    return this.ctx.app;
  }

  /** Wakes waiters when a task changes; fed by this service's writes and the store's notifications. */
  get changes(): ChangeFeed {
    return this.ctx.changes;
  }

  /** Workers of this process that take an admitted task at once (see `AdmissionClaimers`). */
  get admissionClaims(): AdmissionClaimers {
    return this.ctx.admissionClaims;
  }

  /** Who hears every decision, task end, claim and store round trip (the logger, the metrics). */
  get events(): TaskEvents {
    return this.ctx.events;
  }

  /** Whether other processes' changes reach this one: `off` where the store has no notifications or `start` was not called. */
  get notifications(): NotificationState {
    return this.relay.state;
  }

  /** What the store behind the guard can do (notifications, sharing between processes). */
  get supports(): StoreCapabilities {
    return this.ctx.store.supports;
  }

  now(): Millis {
    return this.ctx.clock();
  }

  // The requestor's surface.

  /** `tasks/get`, or one look of `tasks/result` without waiting. */
  read(input: { auth: string; method: ReadOnlyMethod; taskId: string; correlationId?: string; quietIf?: QuietIf }): Promise<ReadOutcome> {
    return this.outlast(() => this.requests.read(input));
  }

  /**
   * Runs a read for a requestor through a store outage of up to `limits.storeOutageMs` (see
   * `rideThrough`); past it, or when `signal` aborts, the store's error is thrown, which each
   * wire answers as the retryable `Store unavailable`.
   */
  outlast<T>(read: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return rideThrough(read, this.ctx.limits.storeOutageMs, signal);
  }

  /** `tasks/result`, held until the task is terminal (see `awaitResult` in `result-wait.ts`). */
  awaitResult(input: AwaitResultInput): Promise<ReadOutcome> {
    const { ctx } = this;
    const parts = {
      changes: ctx.changes,
      events: ctx.events,
      clock: ctx.clock,
      reads: this.requests,
      fallbackPollMs: () => this.relay.fallbackPollMs(),
      outlast: <T>(read: () => Promise<T>) => this.outlast(read, input.signal),
    };
    return awaitResult(parts, input);
  }

  /** A decision a wire made outside any store write, to the aggregated audit (see `RequestorSurface.recordDecision`). */
  recordDecision(input: RecordDecisionInput): Promise<void> {
    return this.requests.recordDecision(input);
  }

  /** `tasks/cancel`: the cancellation is stored before this resolves. */
  cancel(input: { auth: string; taskId: string; correlationId?: string }): Promise<CancelTaskOutcome> {
    return this.requests.cancel(input);
  }

  /** `tasks/list`: one page of the caller's unexpired tasks. A bad or foreign cursor throws INVALID_CURSOR. */
  list(input: { auth: string; cursor?: string | undefined; limit?: number; correlationId?: string }): Promise<ListOutcome> {
    return this.outlast(() => this.requests.list(input));
  }

  // The worker's surface (`WorkerPort`).

  claim(input: ClaimRequest): Promise<TaskRecord[]> {
    return this.writes.claim(input);
  }

  heartbeat(input: { fence: Fence; leaseMs: number }): Promise<boolean> {
    return this.writes.heartbeat(input);
  }

  release(input: { fence: Fence }): Promise<boolean> {
    return this.writes.release(input);
  }

  /** A status write by a worker or the runtime; `write.expectedVersion` is the fence. */
  transition(input: { auth: string; taskId: string; write: StatusWrite; correlationId?: string }): Promise<TransitionOutcome> {
    return this.writes.transition(input);
  }

  setStatus(input: { fence: Fence; message: string }): Promise<TransitionOutcome> {
    return this.writes.setStatus(input);
  }

  complete(input: { fence: Fence; result: unknown }): Promise<TransitionOutcome> {
    return this.writes.complete(input);
  }

  fail(input: { fence: Fence; result: unknown }): Promise<TransitionOutcome> {
    return this.writes.fail(input);
  }

  ask(input: AskRequest): Promise<AskOutcome> {
    return this.writes.ask(input);
  }

  recordStep(input: RecordStepRequest): Promise<RecordStepOutcome> {
    return this.writes.recordStep(input);
  }

  lookupSteps(input: { auth: string; taskId: string }): Promise<StepRecord[]> {
    return this.writes.lookupSteps(input);
  }

  lookup(input: { auth: string; taskId: string }): Promise<LookupOutcome> {
    return this.writes.lookup(input);
  }

  lookupInputs(input: { auth: string; taskId: string }): Promise<StoredInput[]> {
    return this.answers.lookupInputs(input);
  }

  // The answers to a task's questions.

  answer(input: { auth: string; taskId: string; responses: Readonly<Record<string, unknown>>; correlationId?: string }): Promise<AnswerOutcome> {
    return this.answers.answer(input);
  }

  inputs(input: { auth: string; taskId: string }): Promise<InputsOutcome> {
    return this.answers.inputs(input);
  }

  failOverdueInputs(input: { limit?: number } = {}): Promise<OverdueOutcome> {
    return this.answers.failOverdueInputs(input);
  }

  // The store's notifications and shared state.

  /** Starts relaying the store's cross-process change notifications, where it has them. */
  start(onError?: (error: Error) => void): Promise<void> {
    return this.relay.start(onError);
  }

  async stop(): Promise<void> {
    await this.relay.stop();
  }

  /** A running task's progress, for requestors connected to other processes (best effort; never throws). */
  publishProgress(record: TaskRecord, progress: number, total?: number, message?: string): void {
    this.relay.publishProgress(record, progress, total, message);
  }

  /** The secret every process on this store shares (cursors, signed request state). */
  async sharedSecret(): Promise<Uint8Array> {
    return this.ctx.store.sharedSecret();
  }

  /** Outbox entries not yet closed. */
  async pendingDispatch(): Promise<number> {
    return this.ctx.store.pendingDispatch();
  }
}
