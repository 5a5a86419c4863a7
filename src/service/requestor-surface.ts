import { randomUUID } from 'node:crypto';
import { slotOf } from '../core/concurrency-rules.js';
import type { CreateEntry } from '../core/create-rules.js';
import type { Decision, MissDecision, ReadDecision } from '../core/decisions.js';
import { requestDigest } from '../core/digest.js';
import { TasklatchError } from '../core/errors.js';
import { decideList, decideVisibleRead } from '../core/read-rules.js';
import type { Millis, WireRequest } from '../core/types.js';
import type { AdmitOutcome, AuditEntry, LookupOutcome } from '../store/types.js';
import { childTtl } from '../core/child-rules.js';
import { cancelChildren } from './child-cascade.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { GuardContext } from './guard-context.js';
import { grantTtl } from './limits.js';
import type { DecisionEvent } from './task-events.js';
import type { CancelTaskOutcome, ListOutcome, QuietIf, ReadOnlyMethod, ReadOutcome } from './outcomes.js';

/**
 * A task's admission as the guard takes it: the request as it is stored, already checked and
 * prepared by its request (`src/runtime/requests/`: its keys agree, what the tool's `prepare`
 * returned is in it, its size is within `maxRequestBytes`).
 */
export interface AdmissionInput {
  auth: string;
  /** The name of the tool the task runs. */
  tool: string;
  /** The request as stored (its digest is the idempotency check's); a `params.task.ttl` asks for a ttl. */
  request: WireRequest;
  /** The task's idempotency key (`_meta`'s or the HTTP header's, which agree), or null. */
  idempotencyKey: string | null;
  correlationId?: string;
  /** A child task's parent (`ctx.step.runTool`): recorded with the child, whose ttl ends no later than the parent's. */
  parent?: { taskId: string; expiresAt: Millis | null };
}

/** A call's decision that stores no task: a plain call (`ACCEPT_NORMAL`) or a refusal (`BLOCK_*`). */
export interface CallDecisionInput {
  auth: string;
  /** The name of the tool called. */
  tool: string;
  decision: Exclude<CreateEntry, 'ADMIT'>;
  correlationId?: string;
}

/** A decision a wire made outside any store write (see `RequestorSurface.recordDecision`). */
export interface RecordDecisionInput {
  surface: DecisionEvent['surface'];
  decision: DecisionEvent['decision'];
  auth: string;
  taskId: string | null;
  correlationId?: string;
  detail?: string;
  read?: boolean;
}

/** The fields of a read decision's audit line and event that do not depend on the decision. */
interface ReadBase {
  at: Millis;
  surface: 'read';
  authKey: string;
  taskId: string;
  correlationId: string;
}

/**
 * A decision on `base`, as its audit line or its event. Written out, not `{ ...base, decision }`:
 * on Node 20 an object spread followed by more properties takes V8's slow path (~0.5 µs for
 * one property, ~1.8 µs for three, against ~10 ns for this literal), and every poll builds two.
 */
function decidedOn(base: ReadBase, decision: Decision, status?: string | null, version?: number): AuditEntry & DecisionEvent {
  const { at, surface, authKey, taskId, correlationId } = base;
  if (version !== undefined) return { at, surface, authKey, taskId, correlationId, decision, status, version };
  if (status !== undefined) return { at, surface, authKey, taskId, correlationId, decision, status };
  return { at, surface, authKey, taskId, correlationId, decision };
}

/**
 * What a request decides with the guard: admit a task (or record the decision of a call that
 * stores none), read one, cancel one, list them. The request orders its own steps (the request
 * layer, `src/runtime/requests/`); everything that depends on stored facts is one atomic store
 * operation here; every decision is audited and told on the events.
 */
export class RequestorSurface {
  constructor(private readonly ctx: GuardContext) {}

  /**
   * The decision of a call that stores no task: a plain call's `ACCEPT_NORMAL` or a refusal's
   * `BLOCK_*`, one count in the aggregated audit and one decision event.
   */
  async recordCall(input: CallDecisionInput): Promise<void> {
    const { ctx } = this;
    const correlationId = input.correlationId ?? randomUUID();
    const { auth, tool, decision } = input;
    await ctx.audit({ at: ctx.clock(), surface: 'create', decision, authKey: auth, taskId: null, correlationId });
    ctx.decided({ authKey: auth, correlationId, tool, surface: 'create', decision, taskId: null });
  }

  /**
   * A task's admission, the request already checked and prepared (see `AdmissionInput`): one
   * store write decides it with the stored facts (replay, collision, the caller's bounds) and
   * writes its audit line; a worker of this process with a free slot for the tool takes the
   * task in the same write (`AdmissionClaimers`); an accepted task is published.
   */
  async admit(input: AdmissionInput): Promise<AdmitOutcome> {
    const { ctx } = this;
    const now = ctx.clock();
    const correlationId = input.correlationId ?? randomUUID();
    const { tool } = input;
    // A task the server chose (2026-07-28) has no `params.task`: the default ttl.
    const task = input.request.params.task as { ttl?: unknown } | undefined;
    // A task of a concurrency key is never leased by its admission: only the claim counts its key's runs.
    const reservation = ctx.store.supports.claimsOnAdmit === true && slotOf(input.request) === null ? ctx.admissionClaims.reserve(tool) : null;
    const claim =
      reservation === null
        ? null
        : { owner: reservation.owner, leaseMs: reservation.leaseMs, maxAttempts: reservation.maxAttempts, correlationId: randomUUID() };
    // Built before the round trip is timed: the digest is this process's work, not the store's.
    const admission = {
      taskId: ctx.newTaskId(),
      authKey: input.auth,
      app: ctx.app,
      toolName: tool,
      toolDigest: ctx.toolDigest(tool),
      toolVersion: ctx.toolVersion(tool),
      request: input.request,
      requestDigest: requestDigest(input.request),
      idempotencyKey: input.idempotencyKey,
      ttl: input.parent === undefined ? grantTtl(task?.ttl, ctx.limits) : childTtl(grantTtl(task?.ttl, ctx.limits), input.parent.expiresAt, now),
      pollInterval: ctx.limits.pollInterval,
      correlationId,
      now,
      maxActive: ctx.limits.maxActiveTasks,
      maxStored: ctx.limits.maxStoredTasks,
      claim,
      parentTaskId: input.parent?.taskId ?? null,
    };
    const outcome = await ctx.timed('admit', ctx.started(), ctx.store.admit(admission)).catch((error: unknown) => {
      reservation?.release();
      throw error;
    });
    const claimed = outcome.decision === 'ACCEPT_TASK' ? (outcome.claimed ?? null) : null;
    // The run starts before the changes are published: the worker's own task is no news to it.
    if (claimed !== null) reservation?.run(claimed);
    else reservation?.release();
    if (outcome.decision === 'ACCEPT_TASK') ctx.changes.publish(outcome.record.taskId, outcome.record.version, outcome.record);
    if (claimed !== null && claim !== null) ctx.claimed(claimed, claim.correlationId, claim.owner, now);
    const { decision, record } = outcome;
    ctx.decided({ authKey: input.auth, correlationId, tool, surface: 'create', decision, taskId: record?.taskId ?? null, status: record?.status ?? null });
    return outcome;
  }

  /** `tasks/get`, or one look of `tasks/result` (the decision only; `awaitResult` holds it until the task ends). */
  async read(input: { auth: string; method: ReadOnlyMethod; taskId: string; correlationId?: string; quietIf?: QuietIf }): Promise<ReadOutcome> {
    // Checked at run time too: a JS caller's `tasks/cancel` here would be told CANCEL_TASK with nothing cancelled.
    if (input.method !== 'tasks/get' && input.method !== 'tasks/result') {
      throw new TasklatchError('INVALID_INPUT', `read takes tasks/get or tasks/result, not ${String(input.method)}; a cancellation is cancel()`);
    }
    const now = this.ctx.clock();
    const base = this.readBase(now, input);
    // The stored fact, read now: another process may have written since any notification came,
    // and a notification may be late or lost. Reads stay cheap by sharing statements (the
    // PostgreSQL store batches concurrent reads), never by answering from memory.
    const found = await this.ctx.timed('get', this.ctx.started(), this.ctx.store.get({ authKey: input.auth, taskId: input.taskId, now }));
    return this.decideFound(input, found, base);
  }

  /**
   * The same decision, audit line and event as `read`, on a record this process just wrote
   * (what a held `tasks/result` decides from when the write it was woken by returned the record).
   */
  decideOn(input: { auth: string; method: ReadOnlyMethod; taskId: string; quietIf?: QuietIf }, found: LookupOutcome): Promise<ReadOutcome> {
    return this.decideFound(input, found, this.readBase(this.ctx.clock(), input));
  }

  /**
   * `tasks/cancel`: latched in one store write, which also writes its audit line. `byOperator`:
   * the store's operator decided it (`cancelAsOperator`), not the task's client, so the
   * receiver's capabilities do not apply and the audit line says whose decision it was.
   */
  async cancel(input: { auth: string; taskId: string; correlationId?: string; byOperator?: boolean }): Promise<CancelTaskOutcome> {
    const { ctx } = this;
    const now = ctx.clock();
    const base = this.readBase(now, input);
    const byOperator = input.byOperator === true;
    if (ctx.capabilities.cancel === undefined && !byOperator) {
      await ctx.audit(decidedOn(base, 'BLOCK_CAPABILITY'));
      ctx.decided(decidedOn(base, 'BLOCK_CAPABILITY'));
      return { decision: 'BLOCK_CAPABILITY', record: null };
    }
    const cancelled = await ctx.timed(
      'cancel',
      ctx.started(),
      ctx.store.cancel({ authKey: input.auth, taskId: input.taskId, now, correlationId: base.correlationId, ...(byOperator ? { byOperator } : {}) }),
    );
    if (cancelled.decision === 'CANCEL_TASK') ctx.changes.publish(input.taskId, cancelled.record.version, cancelled.record);
    ctx.decided(decidedOn(base, cancelled.decision, cancelled.record?.status ?? null));
    if (cancelled.decision === 'CANCEL_TASK') ctx.ended(cancelled.record, base.correlationId);
    // A cancelled parent's running children are cancelled with it (child-cascade.ts).
    if (cancelled.record !== null)
      await cancelChildren(ctx, cancelled.record, (child) => this.cancel(Object.assign(child, { byOperator })), base.correlationId);
    return cancelled;
  }

  /**
   * An operator's cancel (the web console): any task of the store, under the auth key it is
   * stored with, audited as the operator's decision. NOT_FOUND when no task has this id.
   */
  async cancelAsOperator(input: { taskId: string; correlationId: string }): Promise<CancelTaskOutcome> {
    const seen = await this.ctx.timed('inspectTask', this.ctx.started(), this.ctx.store.inspectTask({ taskId: input.taskId }));
    if (seen === null) return { decision: 'NOT_FOUND', record: null };
    return this.cancel({ auth: seen.record.authKey, taskId: input.taskId, correlationId: input.correlationId, byOperator: true });
  }

  /** `tasks/list`: one page of the caller's unexpired tasks. A bad or foreign cursor throws INVALID_CURSOR. */
  async list(input: { auth: string; cursor?: string | undefined; limit?: number; correlationId?: string }): Promise<ListOutcome> {
    const { ctx } = this;
    const now = ctx.clock();
    const correlationId = input.correlationId ?? randomUUID();
    const decision = decideList(ctx.capabilities);
    await ctx.audit({ at: now, surface: 'list', decision, authKey: input.auth, taskId: null, correlationId }, true);
    ctx.decided({ surface: 'list', decision, authKey: input.auth, taskId: null, correlationId });
    if (decision === 'BLOCK_CAPABILITY') return { decision, records: null, nextCursor: null };
    const secret = await ctx.timed('sharedSecret', ctx.started(), ctx.store.sharedSecret());
    const after = input.cursor === undefined ? null : decodeCursor(secret, input.auth, input.cursor);
    const limit = Math.max(1, Math.min(input.limit ?? ctx.limits.pageSize, ctx.limits.pageSize));
    const page = await ctx.timed('list', ctx.started(), ctx.store.list({ authKey: input.auth, now, after, limit }));
    const last = page.records.at(-1);
    const nextCursor = page.hasMore && last !== undefined ? encodeCursor(secret, input.auth, last) : null;
    return { decision, records: page.records, nextCursor };
  }

  private readBase(now: Millis, input: { auth: string; taskId: string; correlationId?: string }): ReadBase {
    return { at: now, surface: 'read', authKey: input.auth, taskId: input.taskId, correlationId: input.correlationId ?? randomUUID() };
  }

  /** The audit line, the event and the outcome of a get or result decision on a looked-up record. */
  private async decideFound(input: { method: ReadOnlyMethod; quietIf?: QuietIf | undefined }, found: LookupOutcome, base: ReadBase): Promise<ReadOutcome> {
    const { ctx } = this;
    if (found.decision !== 'FOUND') {
      if (input.quietIf?.(found.decision) !== true) {
        await ctx.audit(decidedOn(base, found.decision), true);
        ctx.decided(decidedOn(base, found.decision));
      }
      return { decision: found.decision, record: null };
    }
    const decision = decideVisibleRead(input.method, found.record) as Exclude<ReadDecision, MissDecision | 'BLOCK_CAPABILITY'>;
    if (input.quietIf?.(decision) !== true) {
      await ctx.audit(decidedOn(base, decision, found.record.status, found.record.version), true);
      if (ctx.events.wants('decision')) ctx.decided(decidedOn(base, decision, found.record.status));
    }
    return { decision, record: found.record };
  }

  /**
   * A decision a wire made outside any store write (a refusal, a miss found by a read that
   * decides nothing itself): one count in the aggregated audit (one row per task or caller,
   * decision and hour: `TaskUpkeep.recordDecision`), and one decision event. `read`: a read's
   * decision, not audited when reads are not (`auditReads`).
   */
  async recordDecision(input: RecordDecisionInput): Promise<void> {
    const { ctx } = this;
    const correlationId = input.correlationId ?? randomUUID();
    const { surface, decision, taskId } = input;
    const detail = input.detail === undefined ? {} : { detail: input.detail };
    await ctx.audit({ at: ctx.clock(), surface, decision, authKey: input.auth, taskId, correlationId, ...detail }, input.read === true);
    ctx.decided({ surface, decision, authKey: input.auth, taskId, correlationId, ...detail });
  }
}
