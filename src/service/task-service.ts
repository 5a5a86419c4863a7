import { randomUUID } from 'node:crypto';
import { checkAppName, DEFAULT_APP } from '../core/app-name.js';
import { decideCreateEntry, idempotencyKeyOf, type CreateEntry } from '../core/create-rules.js';
import { isTerminal } from '../core/types.js';
import type { ListDecision, MissDecision, ReadDecision } from '../core/decisions.js';
import { requestDigest } from '../core/digest.js';
import { TasklatchError } from '../core/errors.js';
import { decideList, decideVisibleRead } from '../core/read-rules.js';
import type { Millis, ReadMethod, StatusWrite, TaskCapabilities, TaskRecord, ToolDescriptor, WireRequest } from '../core/types.js';
import type { InputRequest, StoredInput } from '../core/input-rules.js';
import type { StepRecord, StepWrite } from '../core/step-rules.js';
import type {
  AdmitOutcome,
  AnswerOutcome,
  AskOutcome,
  AuditEntry,
  ClaimInput,
  Fence,
  InputsOutcome,
  LookupOutcome,
  OverdueOutcome,
  RecordStepOutcome,
  StoreCapabilities,
  TaskStore,
  TransitionOutcome,
} from '../store/types.js';
import { ChangeFeed } from './change-feed.js';
import { AdmissionClaimers } from './admission-claims.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { DEFAULT_LIMITS, grantTtl, jsonBytes, type TaskLimits } from './limits.js';
import { claimEventOf, reportOverdue, taskEndOf, TaskEvents, type DecisionEvent } from './task-events.js';
import { waitForResult } from './result-wait.js';
import { timedStore } from './timed-store.js';

export interface TaskServiceOptions {
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

export type CreateOutcome = { decision: Exclude<CreateEntry, 'ADMIT'>; record: null } | AdmitOutcome;

export type ReadOutcome =
  { decision: Exclude<ReadDecision, MissDecision | 'BLOCK_CAPABILITY'>; record: TaskRecord } | { decision: MissDecision | 'BLOCK_CAPABILITY'; record: null };

export type ListOutcome =
  | { decision: Extract<ListDecision, 'LIST_FILTERED'>; records: TaskRecord[]; nextCursor: string | null }
  | { decision: 'BLOCK_CAPABILITY'; records: null; nextCursor: null };

/**
 * The guard in front of a store: applies the request-only rules (capabilities, taskSupport),
 * hands everything that depends on stored facts to the store's atomic operations, and writes
 * every decision to the audit trail. Protocol adapters, workers and the replay all go through
 * here, and every write that changes a record is published on `changes` by this class alone.
 */
export class TaskService {
  /** The store behind the guard: for composition (sweeper, closing), never for task writes. */
  readonly store: TaskStore;
  readonly capabilities: TaskCapabilities;
  readonly limits: TaskLimits;
  private readonly clock: () => Millis;
  private readonly newTaskId: () => string;
  private readonly auditReads: boolean;
  /** The app every admission of this service records (`TaskServiceOptions.app`). */
  readonly app: string;
  private readonly toolDigest: (toolName: string) => string | null;
  /** Wakes waiters when a task changes; fed by this service's writes and the store's notifications. */
  readonly changes: ChangeFeed;
  /** Workers of this process that take an admitted task at once (see `AdmissionClaimers`). */
  readonly admissionClaims = new AdmissionClaimers();
  private stopListening: (() => Promise<void>) | null = null;
  /**
   * Who hears every decision, task end, claim and store round trip (the logger, the metrics).
   * The decisions are the ones the audit trail holds, reported by the one class that sees them all.
   */
  readonly events = new TaskEvents();
  /** Whether other processes' changes reach this one: `off` where the store has no notifications or `start` was not called. */
  notifications: 'off' | 'up' | 'down' = 'off';

  constructor(options: TaskServiceOptions) {
    this.store = timedStore(options.store, this.events);
    this.capabilities = options.capabilities;
    this.clock = options.clock ?? Date.now;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.newTaskId = options.newTaskId ?? randomUUID;
    this.auditReads = options.auditReads ?? true;
    this.app = checkAppName(options.app ?? DEFAULT_APP);
    this.toolDigest = options.toolDigest ?? (() => null);
    this.changes = new ChangeFeed();
  }

  now(): Millis {
    return this.clock();
  }

  /** What the store behind the guard can do (notifications, sharing between processes). */
  get supports(): StoreCapabilities {
    return this.store.supports;
  }

  /** A `tools/call`, plain or task-augmented. */
  async create(input: {
    auth: string;
    tool: ToolDescriptor;
    request: WireRequest;
    /** A key from outside the request (the HTTP `Idempotency-Key` header). */
    idempotencyKey?: string | null;
    correlationId?: string;
    /**
     * Runs after the request-only rules chose a task and before anything is stored: argument
     * validation. Throwing here leaves no record, no outbox entry and no side effect.
     */
    beforeAdmit?: () => void | Promise<void>;
  }): Promise<CreateOutcome> {
    const now = this.clock();
    const correlationId = input.correlationId ?? randomUUID();
    const entry = decideCreateEntry({ capabilities: this.capabilities, tool: input.tool, request: input.request });
    const who = { authKey: input.auth, correlationId, tool: input.tool.name };
    if (entry !== 'ADMIT') {
      await this.audit({ at: now, surface: 'create', decision: entry, authKey: input.auth, taskId: null, correlationId });
      this.decided({ ...who, surface: 'create', decision: entry, taskId: null });
      return { decision: entry, record: null };
    }
    const metaKey = idempotencyKeyOf(input.request);
    const headerKey = input.idempotencyKey ?? null;
    if (metaKey !== null && headerKey !== null && metaKey !== headerKey) {
      throw new TasklatchError('INVALID_INPUT', 'the Idempotency-Key header and _meta idempotency key differ');
    }
    await input.beforeAdmit?.();
    // After beforeAdmit: what `prepare` returned is part of the stored request.
    const requestBytes = jsonBytes(input.request.params);
    if (requestBytes > this.limits.maxRequestBytes) {
      throw new TasklatchError('INVALID_INPUT', `the request is ${requestBytes} bytes as stored; at most ${this.limits.maxRequestBytes} bytes are kept`);
    }
    const task = input.request.params.task as { ttl?: unknown };
    const reservation = this.store.supports.claimsOnAdmit === true ? this.admissionClaims.reserve(input.tool.name) : null;
    const claim =
      reservation === null
        ? null
        : { owner: reservation.owner, leaseMs: reservation.leaseMs, maxAttempts: reservation.maxAttempts, correlationId: randomUUID() };
    const outcome = await this.store
      .admit({
        taskId: this.newTaskId(),
        authKey: input.auth,
        app: this.app,
        toolName: input.tool.name,
        toolDigest: this.toolDigest(input.tool.name),
        request: input.request,
        requestDigest: requestDigest(input.request),
        idempotencyKey: metaKey ?? headerKey,
        ttl: grantTtl(task.ttl, this.limits),
        pollInterval: this.limits.pollInterval,
        correlationId,
        now,
        maxActive: this.limits.maxActiveTasks,
        maxStored: this.limits.maxStoredTasks,
        claim,
      })
      .catch((error: unknown) => {
        reservation?.release();
        throw error;
      });
    const claimed = outcome.decision === 'ACCEPT_TASK' ? (outcome.claimed ?? null) : null;
    // The run starts before the changes are published: the worker's own task is no news to it.
    if (claimed !== null) reservation?.run(claimed);
    else reservation?.release();
    if (outcome.decision === 'ACCEPT_TASK') this.changes.publish(outcome.record.taskId, outcome.record.version, outcome.record);
    if (claimed !== null && claim !== null) this.claimedWith(claimed, claim.correlationId, claim.owner, now);
    const { decision, record } = outcome;
    this.decided({ ...who, surface: 'create', decision, taskId: record?.taskId ?? null, status: record?.status ?? null });
    return outcome;
  }

  /** A status write by a worker or the runtime. */
  async transition(input: { auth: string; taskId: string; write: StatusWrite; correlationId?: string }): Promise<TransitionOutcome> {
    const correlationId = input.correlationId ?? randomUUID();
    const outcome = await this.store.transition({
      taskId: input.taskId,
      authKey: input.auth,
      write: input.write,
      correlationId,
      now: this.clock(),
    });
    if (outcome.decision === 'APPLY_TRANSITION') this.changes.publish(input.taskId, outcome.record?.version, outcome.record ?? undefined);
    const status = outcome.record?.status ?? null;
    this.decided({ surface: 'transition', decision: outcome.decision, authKey: input.auth, taskId: input.taskId, correlationId, status });
    if (outcome.decision === 'APPLY_TRANSITION' && outcome.record !== null) this.ended(outcome.record, correlationId);
    return outcome;
  }

  /**
   * The stored fact of a task as its own auth context sees it, without a decision or an audit
   * line: what a worker or a status watch reads after an event or a failed write.
   */
  async lookup(input: { auth: string; taskId: string }): Promise<LookupOutcome> {
    return this.store.get({ authKey: input.auth, taskId: input.taskId, now: this.clock() });
  }

  /** A claim made with the admission: published and told as a claim from the outbox is. */
  private claimedWith(record: TaskRecord, correlationId: string, owner: string, now: Millis): void {
    this.changes.publish(record.taskId, record.version, record);
    const { authKey, taskId, status } = record;
    this.decided({ surface: 'transition', decision: 'APPLY_TRANSITION', authKey, taskId, correlationId, status, detail: `claim ${owner}` });
    this.events.emit('claimed', claimEventOf(record, now));
  }

  /**
   * Claims due tasks for a worker (see `TaskStore.claim`); each claim is published. The tasks are
   * this service's app's unless `input.app` names another: what it admits is what it claims.
   */
  async claim(input: Omit<ClaimInput, 'now' | 'correlationId'>): Promise<TaskRecord[]> {
    const now = this.clock();
    const correlationId = randomUUID();
    const claimed = await this.store.claim({ ...input, app: input.app ?? this.app, now, correlationId });
    for (const record of claimed) {
      this.changes.publish(record.taskId, record.version, record);
      const { authKey, taskId, status } = record;
      this.decided({ surface: 'transition', decision: 'APPLY_TRANSITION', authKey, taskId, correlationId, status, detail: `claim ${input.owner}` });
      this.events.emit('claimed', claimEventOf(record, now));
    }
    return claimed;
  }

  /** Extends a held lease; false when the fence no longer holds. The version stays: nothing to publish. */
  async heartbeat(input: { fence: Fence; leaseMs: number }): Promise<boolean> {
    return this.store.heartbeat({ fence: input.fence, now: this.clock(), leaseMs: input.leaseMs });
  }

  /** Gives a held lease back; published so that an idle worker of this process claims it at once. */
  async release(input: { fence: Fence }): Promise<boolean> {
    const correlationId = randomUUID();
    const released = await this.store.release({ fence: input.fence, now: this.clock(), correlationId });
    if (released) this.changes.publish(input.fence.taskId);
    const { authKey, taskId, owner } = input.fence;
    if (released) this.decided({ surface: 'transition', decision: 'RELEASE_LEASE', authKey, taskId, correlationId, detail: `release ${owner}` });
    return released;
  }

  /**
   * A running task asks its requestor (see `TaskStore.ask`); the change is published. With
   * `timeoutMs` each question is due that long after now (this service's clock).
   */
  async ask(input: {
    fence: Fence;
    askSeq: number;
    /** The ask's place among the run's steps, sleeps and asks (its journal position). */
    position?: number;
    questions: ReadonlyArray<{ key: string; request: InputRequest }>;
    timeoutMs?: number;
  }): Promise<AskOutcome> {
    const now = this.clock();
    const { timeoutMs, ...rest } = input;
    // Whole milliseconds: the stores keep integer columns.
    const deadlineAt = timeoutMs === undefined ? null : now + Math.ceil(timeoutMs);
    const questions = rest.questions.map((q) => ({ ...q, deadlineAt }));
    const correlationId = randomUUID();
    const out = await this.store.ask({ ...rest, questions, now, correlationId });
    if (out.decision === 'APPLY_ASK') this.changes.publish(input.fence.taskId, out.record?.version, out.record ?? undefined);
    const { authKey, taskId } = input.fence;
    this.decided({ surface: 'input', decision: out.decision, authKey, taskId, correlationId, status: out.record?.status ?? null });
    return out;
  }

  /**
   * A run records one step of its task's journal (see `TaskStore.recordStep`), bounded by
   * `limits.maxStepBytes`; a write that suspends the task changes its record and is published.
   */
  async recordStep(input: { fence: Fence; step: StepWrite; suspend?: { wakeAt: Millis; statusMessage: string } | null }): Promise<RecordStepOutcome> {
    const correlationId = randomUUID();
    const out = await this.store.recordStep({ ...input, maxStepBytes: this.limits.maxStepBytes, now: this.clock(), correlationId });
    const { authKey, taskId } = input.fence;
    if (out.decision === 'APPLY_STEP' && input.suspend) this.changes.publish(taskId, out.record?.version, out.record ?? undefined);
    const detail = `${input.step.name}@${input.step.position} ${input.step.status}`;
    this.decided({ surface: 'step', decision: out.decision, authKey, taskId, correlationId, status: out.record?.status ?? null, detail });
    return out;
  }

  /** The journal of a task for its own auth context, in position order; none when it is out of reach (a worker's read). */
  async lookupSteps(input: { auth: string; taskId: string }): Promise<StepRecord[]> {
    return (await this.store.steps({ authKey: input.auth, taskId: input.taskId, now: this.clock() })).steps ?? [];
  }

  /** The requestor answers (see `TaskStore.answer`); a stored answer is published. */
  async answer(input: { auth: string; taskId: string; responses: Readonly<Record<string, unknown>>; correlationId?: string }): Promise<AnswerOutcome> {
    const correlationId = input.correlationId ?? randomUUID();
    const out = await this.store.answer({
      authKey: input.auth,
      taskId: input.taskId,
      responses: input.responses,
      now: this.clock(),
      correlationId,
    });
    if (out.decision === 'APPLY_ANSWER') this.changes.publish(input.taskId, out.record?.version, out.record ?? undefined);
    this.decided({ surface: 'input', decision: out.decision, authKey: input.auth, taskId: input.taskId, correlationId, status: out.record?.status ?? null });
    return out;
  }

  /**
   * Ends up to `limit` tasks whose outstanding question is past its deadline (see
   * `TaskStore.failOverdueInputs`) and publishes each, so that waiting results and
   * subscriptions in this process wake.
   */
  async failOverdueInputs(input: { limit?: number } = {}): Promise<OverdueOutcome> {
    const correlationId = randomUUID();
    const ended = await this.store.failOverdueInputs({ now: this.clock(), limit: input.limit ?? 100, correlationId });
    for (const { taskId, version } of ended) this.changes.publish(taskId, version);
    if (ended.length > 0) await reportOverdue(this.store, this.events, ended, correlationId);
    return ended;
  }

  /** The questions of a task for its own auth context; none when it is out of reach (a worker's read). */
  async lookupInputs(input: { auth: string; taskId: string }): Promise<StoredInput[]> {
    return (await this.inputs(input)).inputs ?? [];
  }

  /** The questions of the caller's task, answered and outstanding. */
  async inputs(input: { auth: string; taskId: string }): Promise<InputsOutcome> {
    return this.store.inputs({ authKey: input.auth, taskId: input.taskId, now: this.clock() });
  }

  /** The secret every process on this store shares (cursors, signed request state). */
  async sharedSecret(): Promise<Uint8Array> {
    return this.store.sharedSecret();
  }

  /** Outbox entries not yet closed. */
  async pendingDispatch(): Promise<number> {
    return this.store.pendingDispatch({ now: this.clock() });
  }

  /** `tasks/get`, `tasks/result` (the decision only; waiting is the adapter's) and `tasks/cancel`. */
  async read(input: {
    auth: string;
    method: ReadMethod;
    taskId: string;
    correlationId?: string;
    /** A get or result decision for which no audit line is written (one already says the same). */
    quietIf?: (decision: ReadOutcome['decision']) => boolean;
  }): Promise<ReadOutcome> {
    const now = this.clock();
    const correlationId = input.correlationId ?? randomUUID();
    const base = { at: now, surface: 'read' as const, authKey: input.auth, taskId: input.taskId, correlationId };
    if (input.method === 'tasks/cancel') {
      if (this.capabilities.cancel === undefined) {
        await this.audit({ ...base, decision: 'BLOCK_CAPABILITY' });
        this.decided({ ...base, decision: 'BLOCK_CAPABILITY' });
        return { decision: 'BLOCK_CAPABILITY', record: null };
      }
      // The store classifies and writes its own audit line in the cancel transaction.
      const cancelled = await this.store.cancel({ authKey: input.auth, taskId: input.taskId, now, correlationId });
      if (cancelled.decision === 'CANCEL_TASK') this.changes.publish(input.taskId, cancelled.record.version, cancelled.record);
      this.decided({ ...base, decision: cancelled.decision, status: cancelled.record?.status ?? null });
      if (cancelled.decision === 'CANCEL_TASK') this.ended(cancelled.record, correlationId);
      return cancelled;
    }
    // The stored fact, read now: another process may have written since any notification came,
    // and a notification may be late or lost. Reads stay cheap by sharing statements (the
    // PostgreSQL store batches concurrent reads), never by answering from memory.
    const found = await this.store.get({ authKey: input.auth, taskId: input.taskId, now });
    return this.decideFound(input, found, base);
  }

  /** The audit line, the event and the outcome of a get or result decision on a looked-up record. */
  private async decideFound(
    input: { method: ReadMethod; quietIf?: ((decision: ReadOutcome['decision']) => boolean) | undefined },
    found: LookupOutcome,
    base: { at: Millis; surface: 'read'; authKey: string; taskId: string; correlationId: string },
  ): Promise<ReadOutcome> {
    if (found.decision !== 'FOUND') {
      if (input.quietIf?.(found.decision) !== true) {
        await this.audit({ ...base, decision: found.decision }, true);
        this.decided({ ...base, decision: found.decision });
      }
      return { decision: found.decision, record: null };
    }
    const decision = decideVisibleRead(input.method, found.record) as Exclude<ReadDecision, MissDecision | 'BLOCK_CAPABILITY'>;
    if (input.quietIf?.(decision) !== true) {
      await this.audit({ ...base, decision, status: found.record.status, version: found.record.version }, true);
      this.decided({ ...base, decision, status: found.record.status });
    }
    return { decision, record: found.record };
  }

  /** `tasks/list`: one page of the caller's unexpired tasks. A bad or foreign cursor throws INVALID_CURSOR. */
  async list(input: { auth: string; cursor?: string | undefined; limit?: number; correlationId?: string }): Promise<ListOutcome> {
    const now = this.clock();
    const correlationId = input.correlationId ?? randomUUID();
    const decision = decideList(this.capabilities);
    await this.audit({ at: now, surface: 'list', decision, authKey: input.auth, taskId: null, correlationId }, true);
    this.decided({ surface: 'list', decision, authKey: input.auth, taskId: null, correlationId });
    if (decision === 'BLOCK_CAPABILITY') return { decision, records: null, nextCursor: null };
    const secret = await this.store.sharedSecret();
    const after = input.cursor === undefined ? null : decodeCursor(secret, input.auth, input.cursor);
    const limit = Math.max(1, Math.min(input.limit ?? this.limits.pageSize, this.limits.pageSize));
    const page = await this.store.list({ authKey: input.auth, now, after, limit });
    const last = page.records.at(-1);
    const nextCursor = page.hasMore && last !== undefined ? encodeCursor(secret, input.auth, last) : null;
    return { decision, records: page.records, nextCursor };
  }

  /**
   * `tasks/result`: holds until the task is terminal and returns the read decision then (or a
   * miss, once the task expires). Woken by change events; `fallbackPollMs` bounds the wait on
   * stores whose other processes cannot notify this one. Returns early, still waiting, when
   * `signal` aborts.
   */
  async awaitResult(input: {
    auth: string;
    taskId: string;
    signal?: AbortSignal;
    fallbackPollMs?: number;
    /** Called on every wake that finds the task waiting for input (the wire delivers the questions). */
    onWaitInput?: (record: TaskRecord) => void | Promise<void>;
  }): Promise<ReadOutcome> {
    const watch = this.changes.watch(input.taskId);
    this.events.emit('waiting', 'result', 1);
    try {
      const { auth, taskId } = input;
      return await waitForResult(
        {
          watch,
          clock: this.clock,
          readStore: (quietIf) => this.read({ auth, method: 'tasks/result', taskId, quietIf }),
          // A record this process just wrote: the same decision, audit line and event as a store read finding it.
          decideOn: (record, quietIf) =>
            this.decideFound(
              { method: 'tasks/result', quietIf },
              { decision: 'FOUND', record: { ...record } },
              { at: this.clock(), surface: 'read', authKey: auth, taskId, correlationId: randomUUID() },
            ),
          fallbackPollMs: () => input.fallbackPollMs ?? this.fallbackPollMs(),
        },
        input,
      );
    } finally {
      watch.close();
      this.events.emit('waiting', 'result', -1);
    }
  }

  /** Starts relaying the store's cross-process change notifications, where it has them. */
  async start(onError?: (error: Error) => void): Promise<void> {
    if (this.stopListening !== null || !this.supports.listenNotify) return;
    this.stopListening = await this.store.listen(
      (taskId, version) => {
        // null: the connection is back after a loss (see TaskUpkeep.listen).
        if (taskId !== null) return this.changes.publishRemote(taskId, version);
        this.notifications = 'up';
        this.changes.publishAll();
      },
      (error) => {
        this.notifications = 'down';
        onError?.(error);
      },
      (event) => this.changes.publishRemoteProgress(event),
    );
    this.notifications = 'up';
  }

  /**
   * A running task's progress, for requestors connected to other processes: handed to the
   * store's feed, best effort (see `TaskUpkeep.publishProgress`); this process's own listeners
   * hear it from the runtime directly. Never throws to the handler that reported it.
   */
  publishProgress(record: TaskRecord, progress: number, total?: number, message?: string): void {
    const { taskId, version } = record;
    const event = {
      taskId,
      version,
      progress,
      origin: this.changes.origin,
      ...(total === undefined ? {} : { total }),
      ...(message === undefined ? {} : { message }),
    };
    try {
      this.store.publishProgress(event);
    } catch (error) {
      this.store.onProblem?.('progress not published', { taskId, error: String(error) });
    }
  }

  async stop(): Promise<void> {
    const stop = this.stopListening;
    this.stopListening = null;
    this.notifications = 'off';
    await stop?.();
  }

  /**
   * How long a waiter sleeps without an event: short where other processes may write without
   * notifying (a shared SQLite file), long where every writer notifies.
   */
  private fallbackPollMs(): number {
    const notified = !this.supports.shared || this.stopListening !== null;
    return notified ? 30_000 : Math.min(this.limits.pollInterval, 500);
  }

  /** Tells the observers of a decision (the audit line says the same; see `events`). */
  private decided(event: DecisionEvent): void {
    if (this.events.wants('decision')) this.events.emit('decision', event);
  }

  /** A terminal record this service wrote: one task-end event. */
  private ended(record: TaskRecord, correlationId: string): void {
    if (this.events.wants('taskEnded') && isTerminal(record.status)) this.events.emit('taskEnded', taskEndOf(record, correlationId));
  }

  private async audit(entry: AuditEntry, isRead = false): Promise<void> {
    if (isRead && !this.auditReads) return;
    await this.store.recordDecision(entry);
  }
}
