import { randomBytes } from 'node:crypto';
import { decideLimitedAdmission } from '../../core/create-rules.js';
import type { Decision } from '../../core/decisions.js';
import { resultDigest } from '../../core/digest.js';
import { compareListOrder, decideCancel } from '../../core/read-rules.js';
import { isExpired, isPastRetention } from '../../core/time.js';
import { decideTransition } from '../../core/transition-rules.js';
import { classifyMiss } from '../../core/visibility.js';
import { isTerminal, type Fence, type Millis, type TaskRecord, type TaskStatus } from '../../core/types.js';
import { deadlineDetail, deadlineOutcome, type StoredInput } from '../../core/input-rules.js';
import { admissionRecord } from '../admission-record.js';
import { auditLine, cancelDetail } from '../audit-line.js';
import type { StepRecord } from '../../core/step-rules.js';
import { MemoryAudit } from './memory-audit.js';
import { childTasksIn, wakeParentIn } from './memory-children.js';
import { MemoryVersions } from './memory-versions.js';
import { claimIn, closeEntry, heartbeatIn, pendingIn, releaseIn, type MemoryDispatchState, type OutboxEntry } from './memory-dispatch.js';
import { parkedIn, parkIn, unparkAfter, type MemoryParkState } from './memory-park.js';
import { journalOf, recordStepIn, seedSteps, sleepingIn, stepsOf, type MemoryStepState } from './memory-steps.js';
import { sendEventIn, takeEventIn, wakeIfPending, type MemoryEvent, type MemoryEventState } from './memory-events.js';
import type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome } from '../task-event-box.js';
import { listedTask } from '../task-columns.js';
import { answerIn, askIn, inputsOf, overdueIn, seedInputs, type MemoryInputState } from './memory-inputs.js';
import { auditTallyIn, findTasksIn, inspectTaskIn, taskStatsIn, type MemoryOperationsState } from './memory-operations.js';
import type { AuditTally, OperatorPage, RetentionDue, OperatorPosition, SchemaState, TaskFilter, TaskInspection, TaskStats } from '../task-operations.js';
import type {
  AnswerInput,
  AnswerOutcome,
  AskInput,
  AskOutcome,
  InputsOutcome,
  ClaimInput,
  AdmitInput,
  AdmitOutcome,
  AuditEntry,
  CancelInput,
  CancelOutcome,
  ListPage,
  ListPosition,
  LookupOutcome,
  OverdueOutcome,
  StoreCapabilities,
  SweepOutcome,
  TaskRef,
  TaskStore,
  TransitionInput,
  TransitionOutcome,
  RecordStepInput,
  RecordStepOutcome,
  StepsOutcome,
} from '../types.js';
import type { ParkedCount, ParkInput, ParkOutcome } from '../task-steps.js';

/**
 * A store in process memory. Every method runs to completion without awaiting, so each one is
 * atomic by construction; it follows the same rules as the SQL stores and serves tests, replays
 * and single-process demos. Nothing survives the process.
 */
export class MemoryStore implements TaskStore {
  readonly kind = 'memory';
  readonly supports: StoreCapabilities = { listenNotify: false, shared: false };

  private readonly tasks = new Map<string, TaskRecord>();
  /** `${authKey}\n${idempotencyKey}` → taskId: the unique constraint of the SQL stores. */
  private readonly keys = new Map<string, string>();
  /** Non-terminal tasks per auth key: the active-task limit counts these, not the whole history. */
  private readonly active = new Map<string, Set<string>>();
  /** Insertion order is dispatch order among entries available at the same time. */
  private readonly outbox = new Map<string, OutboxEntry>();
  private readonly audit = new MemoryAudit();
  /** taskId → its questions in ask order: the task_inputs table of the SQL stores. */
  private readonly questions = new Map<string, StoredInput[]>();
  private readonly secret = randomBytes(32);
  /** What each role's module sees of the maps above. */
  private readonly dispatchState: MemoryDispatchState = {
    tasks: this.tasks,
    outbox: this.outbox,
    track: (record) => this.track(record),
    audit: (line) => this.audit.append(line),
  };
  private readonly inputState: MemoryInputState = {
    tasks: this.tasks,
    questions: this.questions,
    dueNow: (taskId, now) => {
      const entry = this.outbox.get(taskId);
      if (entry !== undefined && entry.doneAt === null) entry.availableAt = now;
    },
    audit: (line) => this.audit.append(line),
  };
  /** Parked tasks' marks (memory-park.ts): gone with the next applied step or ask and with any terminal write (`track`). */
  private readonly parkState: MemoryParkState = { tasks: this.tasks, marks: new Map(), outbox: this.outbox, audit: this.audit };
  /** taskId → its journal in position order: the task_steps table of the SQL stores. */
  private readonly journal = new Map<string, StepRecord[]>();
  private readonly operations: MemoryOperationsState = {
    journal: this.journal,
    tasks: this.tasks,
    outbox: this.outbox,
    questions: this.questions,
    audit: this.audit,
    parks: this.parkState,
  };
  private readonly stepState: MemoryStepState = { tasks: this.tasks, journal: this.journal, outbox: this.outbox, audit: this.audit };
  /** taskId → its events in send order: the task_events table of the SQL stores. */
  // prettier-ignore
  private readonly eventState: MemoryEventState = { tasks: this.tasks, events: new Map<string, MemoryEvent[]>(), journal: this.stepState.journal, outbox: this.outbox, audit: this.audit };

  // The records role (TaskRecords).

  async admit(input: AdmitInput): Promise<AdmitOutcome> {
    const keyIndex = input.idempotencyKey === null ? null : `${input.authKey}\n${input.idempotencyKey}`;
    let prior = keyIndex === null ? null : (this.tasks.get(this.keys.get(keyIndex) ?? '') ?? null);
    if (prior !== null && keyIndex !== null && isExpired(prior, input.now)) {
      // An expired record no longer holds its key: it is gone for every operation.
      this.keys.delete(keyIndex);
      prior = null;
    }
    const activeCount = input.maxActive == null ? 0 : this.countActive(input.authKey, input.now);
    const storedCount = input.maxStored == null ? 0 : this.countStored(input.authKey, input.now);
    const decision = decideLimitedAdmission(Object.assign({}, input, { auth: input.authKey, prior, activeCount, storedCount }));
    const limited = decision === 'BLOCK_TASK_LIMIT' || decision === 'BLOCK_STORED_LIMIT';
    this.log(input.now, 'create', decision, input.authKey, limited ? null : (prior?.taskId ?? input.taskId), input.correlationId, limited ? null : prior);
    if (decision === 'BLOCK_IDEMPOTENCY_COLLISION' || limited) return { decision, record: null };
    if (decision === 'REPLAY_TASK' && prior !== null) return { decision, record: copy(prior) };
    const record = admissionRecord(input);
    this.tasks.set(record.taskId, record);
    this.track(record);
    if (keyIndex !== null) this.keys.set(keyIndex, record.taskId);
    this.outbox.set(record.taskId, { taskId: record.taskId, createdAt: input.now, availableAt: input.now, doneAt: null });
    return { decision: 'ACCEPT_TASK', record: copy(record) };
  }

  async transition(input: TransitionInput): Promise<TransitionOutcome> {
    const stored = this.tasks.get(input.taskId) ?? null;
    const decision = decideTransition({ task: stored, auth: input.authKey, write: input.write, now: input.now });
    if (decision === 'APPLY_TRANSITION' && stored !== null) {
      const status = input.write.status as TaskStatus;
      stored.status = status;
      this.track(stored);
      stored.version += 1;
      stored.lastUpdatedAt = input.now;
      if (input.write.statusMessage !== undefined) stored.statusMessage = input.write.statusMessage;
      if (isTerminal(status)) {
        stored.result = input.write.result ?? null;
        stored.resultDigest = stored.result === null ? null : resultDigest(stored.result);
        stored.leaseOwner = null;
        stored.leaseExpiresAt = null;
        closeEntry(this.outbox, stored.taskId, input.now);
      }
    }
    const visible = stored !== null && stored.authKey === input.authKey;
    this.log(input.now, 'transition', decision, input.authKey, input.taskId, input.correlationId, visible ? stored : null);
    return { decision, record: visible ? copy(stored) : null };
  }

  async get({ authKey, taskId, now }: TaskRef & { now: Millis }): Promise<LookupOutcome> {
    const stored = this.tasks.get(taskId) ?? null;
    const miss = classifyMiss(stored, authKey, now);
    if (miss !== null || stored === null) return { decision: miss ?? 'NOT_FOUND', record: null };
    return { decision: 'FOUND', record: copy(stored) };
  }

  async visibleTaskIds({ authKey, taskIds, now }: { authKey: string; taskIds: readonly string[]; now: Millis }): Promise<string[]> {
    return [...new Set(taskIds)].filter((taskId) => classifyMiss(this.tasks.get(taskId) ?? null, authKey, now) === null);
  }

  async cancel(input: CancelInput): Promise<CancelOutcome> {
    const { authKey, taskId, now, correlationId } = input;
    const detail = cancelDetail(input) ?? undefined;
    const stored = this.tasks.get(taskId) ?? null;
    const decision = decideCancel(stored, authKey, now);
    if (decision === 'ALREADY_TERMINAL' && stored !== null) {
      this.log(now, 'read', decision, authKey, taskId, correlationId, stored, detail);
      return { decision, record: copy(stored) };
    }
    if (decision !== 'CANCEL_TASK' || stored === null) {
      // decideCancel answers ALREADY_TERMINAL only for a stored record; the fallback is for tsc.
      const miss = decision === 'CANCEL_TASK' || decision === 'ALREADY_TERMINAL' ? 'NOT_FOUND' : decision;
      this.log(now, 'read', miss, authKey, taskId, correlationId, null, detail);
      return { decision: miss, record: null };
    }
    stored.status = 'cancelled';
    this.track(stored);
    stored.cancelRequested = true;
    stored.statusMessage = null; // a wait's or a park's message does not outlive the task
    stored.version += 1;
    stored.lastUpdatedAt = now;
    stored.leaseOwner = null;
    stored.leaseExpiresAt = null;
    closeEntry(this.outbox, taskId, now);
    this.log(now, 'read', 'CANCEL_TASK', authKey, taskId, correlationId, stored, detail);
    return { decision: 'CANCEL_TASK', record: copy(stored) };
  }

  async list(page: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): Promise<ListPage> {
    const { authKey, now, after } = page;
    const rows = [...this.tasks.values()]
      .filter((r) => r.authKey === authKey && !isExpired(r, now) && r.parentTaskId === undefined)
      .filter((r) => after === null || compareListOrder(r, after) > 0)
      .sort(compareListOrder);
    return { records: rows.slice(0, page.limit).map(listedTask), hasMore: rows.length > page.limit };
  }

  // The dispatch role (TaskDispatch): memory-dispatch.ts.

  async claim(input: ClaimInput): Promise<TaskRecord[]> {
    return claimIn(this.dispatchState, input);
  }

  readonly heartbeat = async (input: { fence: Fence; now: Millis; leaseMs: number }): Promise<boolean> => heartbeatIn(this.dispatchState, input);
  readonly release = async (input: { fence: Fence; now: Millis; correlationId: string }): Promise<boolean> => releaseIn(this.dispatchState, input);
  readonly pendingDispatch = async (): Promise<number> => pendingIn(this.dispatchState);

  // The children role (TaskChildren): memory-children.ts.

  readonly childTasks = async (input: { authKey: string; taskId: string }): Promise<TaskRecord[]> => childTasksIn(this.dispatchState, input);
  readonly wakeParent = async (input: { taskId: string; now: Millis }): Promise<string | null> => wakeParentIn(this.dispatchState, input);

  // The worker versions role (WorkerVersions): memory-versions.ts.
  private readonly versions = new MemoryVersions();
  readonly announceVersions = this.versions.announceVersions.bind(this.versions);
  readonly withdrawVersions = this.versions.withdrawVersions.bind(this.versions);
  readonly liveVersions = this.versions.liveVersions.bind(this.versions);

  // The input role (TaskInputs): memory-inputs.ts.

  async ask(input: AskInput): Promise<AskOutcome> {
    return unparkAfter(this.parkState, input.fence.taskId, askIn(this.inputState, input));
  }

  readonly answer = async (input: AnswerInput): Promise<AnswerOutcome> => answerIn(this.inputState, input);
  readonly inputs = async (ref: TaskRef & { now: Millis }): Promise<InputsOutcome> => inputsOf(this.inputState, ref);

  // The step role (TaskSteps): memory-steps.ts.

  async recordStep(input: RecordStepInput): Promise<RecordStepOutcome> {
    const out = unparkAfter(this.parkState, input.fence.taskId, recordStepIn(this.stepState, input));
    // A wait that suspends with an event of its type already pending is due at once.
    const { eventType } = input;
    if (out.decision === 'APPLY_STEP' && input.suspend && eventType != null && wakeIfPending(this.eventState, input.fence.taskId, eventType, input.now))
      out.dueNow = true;
    return out;
  }

  readonly sendEvent = async (input: SendEventInput): Promise<SendEventOutcome> => sendEventIn(this.eventState, input);
  readonly takeEvent = async (input: TakeEventInput): Promise<TakeEventOutcome> => takeEventIn(this.eventState, input);
  readonly park = async (input: ParkInput): Promise<ParkOutcome> => parkIn(this.parkState, input);
  async steps(ref: TaskRef & { now: Millis }): Promise<StepsOutcome> {
    return stepsOf(this.stepState, ref);
  }

  // Upkeep (TaskUpkeep).

  async recordDecision(entry: AuditEntry): Promise<void> {
    this.audit.count(entry);
  }

  readonly auditTrail = async ({ taskId }: { taskId: string }): Promise<AuditEntry[]> => this.audit.trail(taskId);

  async sweepExpired({ now, limit, retentionMs }: { now: Millis; limit: number; retentionMs: number }): Promise<SweepOutcome> {
    let deleted = 0;
    let auditRows = 0;
    for (const record of this.tasks.values()) {
      if (deleted >= limit) break;
      if (!isPastRetention(record, now, retentionMs)) continue;
      auditRows += this.audit.removeTask(record.taskId);
      this.tasks.delete(record.taskId);
      this.track(record, false);
      this.outbox.delete(record.taskId);
      this.questions.delete(record.taskId);
      this.stepState.journal.delete(record.taskId);
      this.eventState.events.delete(record.taskId);
      if (record.idempotencyKey !== null) {
        const keyIndex = `${record.authKey}\n${record.idempotencyKey}`;
        if (this.keys.get(keyIndex) === record.taskId) this.keys.delete(keyIndex);
      }
      deleted++;
    }
    // Orphans once the tasks due are gone, as the SQL stores do.
    const orphans = limit > 0 && deleted < limit ? this.audit.removeOrphans(now - retentionMs, limit, (id) => this.tasks.has(id)) : { lines: 0, reads: 0 };
    const more = deleted >= limit || orphans.lines >= limit || orphans.reads >= limit;
    return { tasks: deleted, auditRows: auditRows + orphans.lines + orphans.reads, more: limit > 0 && more };
  }

  async failOverdueInputs({ now, limit, correlationId }: { now: Millis; limit: number; correlationId: string }): Promise<OverdueOutcome> {
    const ended: OverdueOutcome = [];
    for (const { task, question } of overdueIn(this.inputState, now, limit)) {
      task.status = 'failed';
      this.track(task);
      task.version += 1;
      task.lastUpdatedAt = now;
      task.result = deadlineOutcome(question);
      task.resultDigest = resultDigest(task.result);
      task.leaseOwner = null;
      task.leaseExpiresAt = null;
      closeEntry(this.outbox, task.taskId, now);
      this.log(now, 'transition', 'APPLY_TRANSITION', task.authKey, task.taskId, correlationId, task, deadlineDetail(question.key));
      ended.push({ taskId: task.taskId, version: task.version });
    }
    return ended;
  }

  async seed(records: readonly TaskRecord[], inputs: readonly StoredInput[] = [], steps: readonly StepRecord[] = []): Promise<void> {
    for (const record of records) {
      const previous = this.tasks.get(record.taskId);
      if (previous !== undefined) this.track(previous, false);
      this.tasks.set(record.taskId, copy(record));
      this.track(record);
      if (record.idempotencyKey !== null) this.keys.set(`${record.authKey}\n${record.idempotencyKey}`, record.taskId);
    }
    seedInputs(this.inputState, inputs);
    seedSteps(this.stepState, steps);
  }

  async sharedSecret(): Promise<Uint8Array> {
    return this.secret;
  }

  /** Every change to this store is made in this process, whose service publishes it itself. */
  async listen(): Promise<() => Promise<void>> {
    return async () => undefined;
  }

  /** No other process shares this store: the service delivers progress in this process itself. */
  publishProgress(): void {}

  async close(): Promise<void> {}

  // The operator's reads (TaskOperations): memory-operations.ts.

  readonly findTasks = async (input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): Promise<OperatorPage> =>
    findTasksIn(this.operations, input);
  readonly inspectTask = async ({ taskId }: { taskId: string }): Promise<TaskInspection | null> => inspectTaskIn(this.operations, taskId);
  readonly taskStats = async ({ now }: { now: Millis }): Promise<TaskStats> => taskStatsIn(this.operations, now);
  readonly taskSteps = async ({ taskId }: { taskId: string }): Promise<StepRecord[]> => journalOf(this.stepState, taskId);
  readonly sleepingTasks = async ({ now }: { now: Millis }): Promise<number> => sleepingIn(this.stepState, now);
  readonly parkedTasks = async ({ now }: { now: Millis }): Promise<ParkedCount[]> => parkedIn(this.parkState, now);
  /** Nothing to migrate: the memory store has no schema. */
  readonly schemaState = async (): Promise<SchemaState> => ({ pending: [], mismatch: null });
  readonly auditTally = async ({ after }: { after: number | null }): Promise<AuditTally> => auditTallyIn(this.operations, after);

  async retentionDue({ now, retentionMs }: { now: Millis; retentionMs: number }): Promise<RetentionDue> {
    const due = new Set([...this.tasks.values()].filter((r) => isPastRetention(r, now, retentionMs)).map((r) => r.taskId));
    return { tasks: due.size, auditRows: this.audit.due(due, now - retentionMs, (id) => this.tasks.has(id) && !due.has(id)) };
  }

  /** Unexpired tasks of an auth key, of any status (a scan: the memory store is for tests and replays). */
  private countStored(authKey: string, now: Millis): number {
    let n = 0;
    for (const r of this.tasks.values()) if (r.authKey === authKey && !isExpired(r, now)) n++;
    return n;
  }

  private countActive(authKey: string, now: Millis): number {
    let n = 0;
    for (const taskId of this.active.get(authKey) ?? []) {
      const r = this.tasks.get(taskId);
      if (r !== undefined && !isExpired(r, now)) n++;
    }
    return n;
  }

  /** Keeps `active` in step with a record's status; call after every change of status or existence. */
  private track(record: TaskRecord, present = true): void {
    let ids = this.active.get(record.authKey);
    if (present && !isTerminal(record.status)) {
      if (ids === undefined) this.active.set(record.authKey, (ids = new Set()));
      ids.add(record.taskId);
    } else if (ids !== undefined) {
      ids.delete(record.taskId);
      if (ids.size === 0) this.active.delete(record.authKey);
    }
    if (!present || isTerminal(record.status)) this.parkState.marks.delete(record.taskId);
  }

  private log(
    at: Millis,
    surface: AuditEntry['surface'],
    decision: Decision,
    authKey: string,
    taskId: string | null,
    correlationId: string,
    record: TaskRecord | null,
    detail?: string,
  ): void {
    this.audit.append(auditLine({ at, surface, decision, authKey, taskId, correlationId, record, detail }));
  }
}

function copy(record: TaskRecord): TaskRecord {
  return structuredClone(record);
}
