import { randomUUID } from 'node:crypto';
import type { StoredInput } from '../core/input-rules.js';
import type { StepRecord } from '../core/step-rules.js';
import type { Millis, StatusWrite, TaskRecord } from '../core/types.js';
import type { VersionAnnouncement } from '../core/version-rules.js';
import type {
  AdmitOutcome,
  AskOutcome,
  Fence,
  LookupOutcome,
  ParkOutcome,
  RecordStepOutcome,
  TakeEventOutcome,
  StoreCapabilities,
  TransitionOutcome,
} from '../store/types.js';
import type { AdmissionClaimers } from './admission-claims.js';
import type { ChangeFeed } from './change-feed.js';
import type { GuardContext } from './guard-context.js';
import type { TaskLimits } from './limits.js';
import type { TaskEvents } from './task-events.js';
import { RequestorSurface } from './requestor-surface.js';
import type { AskRequest, ChildAdmission, ClaimRequest, RecordStepRequest, VersionAnnounceRequest, WorkerPort } from './worker-port.js';

/**
 * The writes of whoever runs tasks: claims, leases, status writes under a fence, questions, and
 * the look at a task without a decision. Each write that changes a record is published on the
 * change feed and told on the events; the audit lines are the store's, written with the write.
 */
export class WorkerSurface implements WorkerPort {
  constructor(private readonly ctx: GuardContext) {}

  get app(): string {
    return this.ctx.app;
  }

  get limits(): TaskLimits {
    return this.ctx.limits;
  }

  get supports(): StoreCapabilities {
    return this.ctx.store.supports;
  }

  get changes(): ChangeFeed {
    return this.ctx.changes;
  }

  get events(): TaskEvents {
    return this.ctx.events;
  }

  get admissionClaims(): AdmissionClaimers {
    return this.ctx.admissionClaims;
  }

  now(): Millis {
    return this.ctx.clock();
  }

  /**
   * Claims due tasks for a worker (see `TaskStore.claim`); each claim is published. The tasks are
   * this service's app's unless `input.app` names another: what it admits is what it claims.
   */
  async claim(input: ClaimRequest): Promise<TaskRecord[]> {
    const now = this.ctx.clock();
    const correlationId = randomUUID();
    // Object.assign, not a spread followed by properties (V8's slow path on Node 20; see `decidedOn`).
    const claimed = await this.ctx.timed(
      'claim',
      this.ctx.started(),
      this.ctx.store.claim(Object.assign({}, input, { app: input.app ?? this.ctx.app, now, correlationId })),
    );
    for (const record of claimed) this.ctx.claimed(record, correlationId, input.owner, now);
    return claimed;
  }

  /** Extends a held lease; false when the fence no longer holds. The version stays: nothing to publish. */
  async heartbeat(input: { fence: Fence; leaseMs: number }): Promise<boolean> {
    const { ctx } = this;
    return ctx.timed('heartbeat', ctx.started(), ctx.store.heartbeat({ fence: input.fence, now: ctx.clock(), leaseMs: input.leaseMs }));
  }

  /** Gives a held lease back; published so that an idle worker of this process claims it at once. */
  async release(input: { fence: Fence }): Promise<boolean> {
    const correlationId = randomUUID();
    const released = await this.ctx.timed('release', this.ctx.started(), this.ctx.store.release({ fence: input.fence, now: this.ctx.clock(), correlationId }));
    if (!released) return false;
    this.ctx.changes.publish(input.fence.taskId);
    const { authKey, taskId, owner } = input.fence;
    this.ctx.decided({ surface: 'transition', decision: 'RELEASE_LEASE', authKey, taskId, correlationId, detail: `release ${owner}` });
    return true;
  }

  /** A status write by a worker or the runtime (`write.expectedVersion` is its fence). */
  async transition(input: { auth: string; taskId: string; write: StatusWrite; correlationId?: string }): Promise<TransitionOutcome> {
    const { ctx } = this;
    const correlationId = input.correlationId ?? randomUUID();
    const outcome = await ctx.timed(
      'transition',
      ctx.started(),
      ctx.store.transition({ taskId: input.taskId, authKey: input.auth, write: input.write, correlationId, now: ctx.clock() }),
    );
    if (outcome.decision === 'APPLY_TRANSITION') ctx.changes.publish(input.taskId, outcome.record?.version, outcome.record ?? undefined);
    const status = outcome.record?.status ?? null;
    ctx.decided({ surface: 'transition', decision: outcome.decision, authKey: input.auth, taskId: input.taskId, correlationId, status });
    if (outcome.decision === 'APPLY_TRANSITION' && outcome.record !== null) ctx.ended(outcome.record, correlationId);
    return outcome;
  }

  /** The status message of a working task, written at the run's fence (null: cleared). */
  setStatus(input: { fence: Fence; message: string | null }): Promise<TransitionOutcome> {
    return this.fenced(input.fence, { status: 'working', expectedVersion: input.fence.version, statusMessage: input.message });
  }

  /** A run's terminal write of a result: the task ends `completed`. */
  complete(input: { fence: Fence; result: unknown; statusMessage?: null }): Promise<TransitionOutcome> {
    return this.fenced(input.fence, ended('completed', input));
  }

  /** A run's terminal write of a failure: the task ends `failed` with `result` as its outcome. */
  fail(input: { fence: Fence; result: unknown; statusMessage?: null }): Promise<TransitionOutcome> {
    return this.fenced(input.fence, ended('failed', input));
  }

  /**
   * A running task asks its requestor (see `TaskStore.ask`); the change is published. With
   * `timeoutMs` each question is due that long after now (this service's clock).
   */
  async ask(input: AskRequest): Promise<AskOutcome> {
    const { ctx } = this;
    const now = ctx.clock();
    const { timeoutMs, ...rest } = input;
    // Whole milliseconds: the stores keep integer columns.
    const deadlineAt = timeoutMs === undefined ? null : now + Math.ceil(timeoutMs);
    const questions = rest.questions.map((q) => Object.assign({}, q, { deadlineAt }));
    const correlationId = randomUUID();
    const out = await ctx.timed('ask', ctx.started(), ctx.store.ask(Object.assign({}, rest, { questions, now, correlationId })));
    if (out.decision === 'APPLY_ASK') ctx.changes.publish(input.fence.taskId, out.record?.version, out.record ?? undefined);
    const { authKey, taskId } = input.fence;
    ctx.decided({ surface: 'input', decision: out.decision, authKey, taskId, correlationId, status: out.record?.status ?? null });
    return out;
  }

  /**
   * A run records one step of its task's journal (see `TaskStore.recordStep`), bounded by
   * `limits.maxStepBytes` and the journal's `maxJournalSteps` and `maxJournalBytes`; a write that suspends the task changes its record and is published.
   */
  async recordStep(input: RecordStepRequest): Promise<RecordStepOutcome> {
    const { ctx } = this;
    const correlationId = randomUUID();
    const { maxStepBytes, maxJournalSteps, maxJournalBytes } = ctx.limits;
    const out = await ctx.timed(
      'recordStep',
      ctx.started(),
      ctx.store.recordStep(Object.assign({}, input, { maxStepBytes, maxJournalSteps, maxJournalBytes, now: ctx.clock(), correlationId })),
    );
    const { authKey, taskId } = input.fence;
    if (out.decision === 'APPLY_STEP' && input.suspend) ctx.changes.publish(taskId, out.record?.version, out.record ?? undefined);
    const detail = `${input.step.name}@${input.step.position} ${input.step.status}`;
    ctx.decided({ surface: 'step', decision: out.decision, authKey, taskId, correlationId, status: out.record?.status ?? null, detail });
    return out;
  }

  /** A run takes the event for its wait (see `TaskStore.takeEvent`); nothing is audited until the wait's value is recorded. */
  async takeEvent(input: { fence: Fence; type: string; position: number }): Promise<TakeEventOutcome> {
    const { ctx } = this;
    return ctx.timed('takeEvent', ctx.started(), ctx.store.takeEvent(Object.assign({}, input, { now: ctx.clock() })));
  }

  /**
   * A run parks its task (see `TaskStore.park`): its handler disagrees with the journal, and the
   * task waits, working and without a lease, for code that agrees. An applied park is published.
   */
  async park(input: { fence: Fence; reason: string }): Promise<ParkOutcome> {
    const { ctx } = this;
    const correlationId = randomUUID();
    const out = await ctx.timed('park', ctx.started(), ctx.store.park({ fence: input.fence, reason: input.reason, now: ctx.clock(), correlationId }));
    const { authKey, taskId } = input.fence;
    if (out.decision === 'APPLY_PARK') ctx.changes.publish(taskId, out.record?.version, out.record ?? undefined);
    const detail = out.parked === null ? undefined : `parked ${out.parked.parks}`;
    ctx.decided({ surface: 'step', decision: out.decision, authKey, taskId, correlationId, status: out.record?.status ?? null, detail });
    return out;
  }

  /** The journal of a task for its own auth context, in position order; none when it is out of reach (a worker's read). */
  async lookupSteps(input: { auth: string; taskId: string }): Promise<StepRecord[]> {
    const { ctx } = this;
    return (await ctx.timed('steps', ctx.started(), ctx.store.steps({ authKey: input.auth, taskId: input.taskId, now: ctx.clock() }))).steps ?? [];
  }

  /**
   * The stored fact of a task as its own auth context sees it, without a decision or an audit
   * line: what a worker or a status watch reads after an event or a failed write.
   */
  async lookup(input: { auth: string; taskId: string }): Promise<LookupOutcome> {
    const { ctx } = this;
    return ctx.timed('get', ctx.started(), ctx.store.get({ authKey: input.auth, taskId: input.taskId, now: ctx.clock() }));
  }

  /** A child task of a running parent, admitted through the guard as the parent's principal (see `WorkerPort.startChild`). */
  startChild(input: ChildAdmission): Promise<AdmitOutcome> {
    const { parent, tool, request, idempotencyKey } = input;
    return new RequestorSurface(this.ctx).admit({
      auth: parent.authKey,
      tool,
      request,
      idempotencyKey,
      parent: { taskId: parent.taskId, expiresAt: parent.expiresAt },
    });
  }

  /** A child that ended wakes its waiting parent (see `GuardContext.wakeParent`). */
  wakeParent(input: { taskId: string }): Promise<void> {
    return this.ctx.wakeParent(input.taskId);
  }

  /** The questions of a task for its own auth context; none when it is out of reach (a worker's read). */
  async lookupInputs(input: { auth: string; taskId: string }): Promise<StoredInput[]> {
    const { ctx } = this;
    return (await ctx.timed('inputs', ctx.started(), ctx.store.inputs({ authKey: input.auth, taskId: input.taskId, now: ctx.clock() }))).inputs ?? [];
  }

  /** Writes or renews a worker's version announcement; a fact of the fleet, not of a task: nothing published, no audit line. */
  async announceVersions(input: VersionAnnounceRequest): Promise<void> {
    const { ctx } = this;
    const now = ctx.clock();
    const announce = { app: input.app, workerId: input.workerId, versions: input.versions, now, forgetBefore: now - input.forgetAfterMs };
    await ctx.timed('announceVersions', ctx.started(), ctx.store.announceVersions(announce));
  }

  async withdrawVersions(input: { app: string; workerId: string }): Promise<void> {
    const { ctx } = this;
    await ctx.timed('withdrawVersions', ctx.started(), ctx.store.withdrawVersions(input));
  }

  async liveVersions(input: { app: string; silenceMs: number }): Promise<{ now: Millis; announcements: VersionAnnouncement[] }> {
    const { ctx } = this;
    const now = ctx.clock();
    const announcements = await ctx.timed('liveVersions', ctx.started(), ctx.store.liveVersions({ app: input.app, now, silenceMs: input.silenceMs }));
    return { now, announcements };
  }

  /** A write under `fence`: its auth key and task, at the version it holds. */
  private fenced(fence: Fence, write: StatusWrite): Promise<TransitionOutcome> {
    return this.transition({ auth: fence.authKey, taskId: fence.taskId, write });
  }
}

/** A run's terminal write: its result, and its status message cleared when the run says so. */
function ended(status: 'completed' | 'failed', input: { fence: Fence; result: unknown; statusMessage?: null }): StatusWrite {
  const write: StatusWrite = { status, expectedVersion: input.fence.version, result: input.result };
  if (input.statusMessage === null) write.statusMessage = null;
  return write;
}
