import type { AnswerDecision, AskDecision, Decision, MissDecision, Surface, TransitionDecision } from '../core/decisions.js';
import type { InputRequest, StoredInput } from '../core/input-rules.js';
import type { StepRecord } from '../core/step-rules.js';
import type { Fence, ListedTask, Millis, StatusWrite, TaskRecord, WireRequest } from '../core/types.js';
import type { VersionGrants } from '../core/version-rules.js';
import type { ChildAdmit, TaskChildren } from './task-children.js';
import type { TaskOperations } from './task-operations.js';
import type { CancelInput } from './task-cancel.js';
import type { TaskSteps } from './task-steps.js';
import type { TaskEventBox } from './task-event-box.js';
import type { WorkerVersions } from './worker-versions.js';
import type { ListenOptions } from './listen-options.js';

export type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome, TaskEventBox } from './task-event-box.js';
export type { AnnounceVersionsInput, VersionAnnouncement, WorkerVersions } from './worker-versions.js';
export type { ListenOptions } from './listen-options.js';
export type { ParkInput, ParkOutcome, RecordStepInput, RecordStepOutcome, StepsOutcome, TaskSteps } from './task-steps.js';
export type { CancelInput } from './task-cancel.js';
/** The fence moved into the core with the rule that checks it (`holdsFence`); named here as before. */
export type { Fence } from '../core/types.js';

/** What a store can do; callers read the flags instead of checking classes. */
export interface StoreCapabilities {
  /** Other processes' writes can wake this one (PostgreSQL LISTEN/NOTIFY). */
  readonly listenNotify: boolean;
  /** Several processes may share the store. */
  readonly shared: boolean;
  /** An admission can lease its task to a claimer in the same transaction (`AdmitInput.claim`). */
  readonly claimsOnAdmit?: boolean;
}

/** The claimer an admission leases its task to at once (see `AdmitInput.claim`). */
export interface AdmitClaim {
  owner: string;
  leaseMs: number;
  /** The claimer's bound on attempts, for the dispatch rule (a fresh task has made none). */
  maxAttempts: number;
  /** Of the claim's audit line. */
  correlationId: string;
}

/** Everything the store needs to admit a task-augmented call (the service has decided rules 1–4). */
export interface AdmitInput extends ChildAdmit {
  taskId: string;
  authKey: string;
  /** The admitting application (a checked name; absent: `DEFAULT_APP`). Only its workers claim the task. */
  app?: string;
  toolName: string;
  /** `toolDigest` of the tool's definition at admission (absent: not recorded). */
  toolDigest?: string | null;
  /** The tool's version at admission (`ToolRegistry.version`; absent: not recorded, any worker of the tool may run it). */
  toolVersion?: string | null;
  request: WireRequest;
  requestDigest: string;
  idempotencyKey: string | null;
  ttl: number | null;
  pollInterval: number | null;
  correlationId: string;
  now: Millis;
  /**
   * At most this many non-terminal, unexpired tasks per auth key (null or absent: no limit).
   * Checked in the admission transaction, after idempotency: a retry of an existing task is
   * never refused by it.
   */
  maxActive?: number | null;
  /**
   * At most this many unexpired tasks of any status per auth key (null or absent: no bound),
   * checked like `maxActive` and after it.
   */
  maxStored?: number | null;
  /**
   * A claimer with a free slot for this tool (a worker of the admitting process). A store that
   * `claimsOnAdmit` leases an accepted task to it in the admission's own transaction, as a
   * claim would (a new attempt, version + 1, the outbox entry moved to the lease's end, an audit
   * line), and returns that record as `claimed`; other stores ignore it, and a worker claims the
   * task from the outbox as usual. A replay is never claimed here.
   */
  claim?: AdmitClaim | null;
}

export type AdmitOutcome =
  | { decision: 'ACCEPT_TASK' | 'REPLAY_TASK'; record: TaskRecord; claimed?: TaskRecord | null }
  | { decision: 'BLOCK_IDEMPOTENCY_COLLISION' | 'BLOCK_TASK_LIMIT' | 'BLOCK_STORED_LIMIT'; record: null };

export interface TransitionInput {
  taskId: string;
  authKey: string;
  write: StatusWrite;
  correlationId: string;
  now: Millis;
}

/** `record` is the stored fact after the decision, given only to the record's own auth key. */
export interface TransitionOutcome {
  decision: TransitionDecision;
  record: TaskRecord | null;
}

export type LookupOutcome = { decision: 'FOUND'; record: TaskRecord } | { decision: MissDecision; record: null };

export type CancelOutcome = { decision: 'CANCEL_TASK' | 'ALREADY_TERMINAL'; record: TaskRecord } | { decision: MissDecision; record: null };

/** Keyset position in list order (createdAt, taskId). */
export interface ListPosition {
  createdAt: Millis;
  taskId: string;
}

export interface ListPage {
  /** The page's tasks, as a listing shows them (a full `TaskRecord` is one too). */
  records: ListedTask[];
  /** True when records exist after the last one returned. */
  hasMore: boolean;
}

/** What a worker asks of `claim`. */
export interface ClaimInput {
  /** The claiming worker's id; written to the record as its lease owner. */
  owner: string;
  now: Millis;
  /** Lease length (ms): the claim holds the task until `now + leaseMs` unless renewed. */
  leaseMs: number;
  /** Most tasks claimed by this call. */
  limit: number;
  /**
   * A task already claimed this many times is not run again: the claim ends it `failed` with
   * `abandonedResult` instead (a crash loop must end).
   */
  maxAttempts: number;
  abandonedResult: unknown;
  correlationId: string;
  /**
   * Only tasks of these tools (a worker that runs only some of them); absent, any task. An
   * entry of another tool is not claimed, not locked and not touched: it stays due for a worker
   * that knows its tool.
   */
  tools?: readonly string[];
  /**
   * Only tasks admitted by this application (absent: any app). Like `tools`, an entry of another
   * app is not claimed, not locked and not touched: a tool name means one tool within one app
   * only, and another app's worker would run the wrong handler on it.
   */
  app?: string;
  /**
   * The tool versions the claimer may take (`decideVersionGrants`: its own, and those no live
   * worker runs when it is the newest; a task without a version always); absent, any version.
   * Like `tools`, an entry of another version is not claimed, not locked and not touched.
   */
  versions?: VersionGrants;
}

/**
 * One entry of the audit trail: an exact line (a decision written with a store write), or an
 * aggregated row (decisions made outside one: reads, lists, refusals, misses; see
 * read-audit.ts), which carries `count`, `firstAt` and `lastAt` and the latest decision's
 * correlation id, status, version and detail.
 */
export interface AuditEntry {
  at: Millis;
  surface: Surface;
  decision: Decision;
  authKey: string;
  taskId: string | null;
  correlationId: string;
  /** Status and version after the decision, where a record was involved. */
  status?: string | null;
  version?: number | null;
  detail?: string | null;
  /** Aggregated rows only: how many decisions, the first and the last (`at` is the first). */
  count?: number;
  firstAt?: Millis;
  lastAt?: Millis;
}

/** What one retention batch removed (`sweepExpired`). */
export interface SweepOutcome {
  tasks: number;
  /** Rows of both audit tables: those of the removed tasks and those whose task was already gone. */
  auditRows: number;
  /** A bound was reached: more may be due now. */
  more: boolean;
}

/** One task as its own auth context names it: every lookup carries both. */
export interface TaskRef {
  authKey: string;
  taskId: string;
}

/** The records role: admission, guarded writes and reads of the caller's tasks. */
export interface TaskRecords {
  /** Idempotency lookup (scoped by auth key), task insert and outbox insert, in one transaction. */
  admit(input: AdmitInput): Promise<AdmitOutcome>;
  /** One conditional write (task, auth key, expected version, non-terminal, unexpired). */
  transition(input: TransitionInput): Promise<TransitionOutcome>;
  /** The caller's unexpired task. */
  get(input: TaskRef & { now: Millis }): Promise<LookupOutcome>;
  /**
   * Which of `taskIds` are the caller's unexpired tasks, in one read: each once, in no
   * particular order; another caller's, expired or unknown ids are left out alike.
   */
  visibleTaskIds(input: { authKey: string; taskIds: readonly string[]; now: Millis }): Promise<string[]>;
  /** Latches `cancelled` (and the cancellation intent) in one conditional write. */
  cancel(input: CancelInput): Promise<CancelOutcome>;
  /** The caller's unexpired tasks after `after`, in (createdAt, taskId) order; children (`parentTaskId`) are left out. */
  list(input: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): Promise<ListPage>;
}

/** The dispatch role: workers claim, renew and give back leases on admitted tasks. */
export interface TaskDispatch {
  /**
   * Claims up to `limit` dispatchable tasks from the outbox: each claim is one conditional write
   * (working, unexpired, lease free or expired) that bumps the version (fencing off any earlier
   * holder), counts an attempt and sets the lease. What happens to each due entry is the core's
   * `decideDispatch`. Concurrent claimers never get the same task (PostgreSQL SKIP LOCKED,
   * SQLite IMMEDIATE).
   */
  claim(input: ClaimInput): Promise<TaskRecord[]>;
  /**
   * Extends a held lease to `now + leaseMs`. False when the fence no longer holds (the task was
   * cancelled, finished, expired, or claimed by another worker): the holder must stop.
   */
  heartbeat(input: { fence: Fence; now: Millis; leaseMs: number }): Promise<boolean>;
  /** Gives a held lease back so another worker may claim the task at once (draining). */
  release(input: { fence: Fence; now: Millis; correlationId: string }): Promise<boolean>;
  /** Outbox entries not yet closed, due or not (inspection, chaos checks). */
  pendingDispatch(): Promise<number>;
}

/** One ask of a running task: the questions one handler call asks together. */
export interface AskInput {
  /** The asking run's fence: the ask is refused unless the run still holds the task. */
  fence: Fence;
  /** Which ask of the handler this is (0, 1, …): a run started again finds its questions by it. */
  askSeq: number;
  /** Its place in the journal order shared with steps and sleeps (absent: not said); kept with each question. */
  position?: number;
  /** `deadlineAt`: past it, the question unanswered ends the task failed (see `failOverdueInputs`). */
  questions: ReadonlyArray<{ key: string; request: InputRequest; deadlineAt?: Millis | null }>;
  now: Millis;
  correlationId: string;
}

/** What `failOverdueInputs` ended: each task at the version its failure left it. */
export type OverdueOutcome = Array<{ taskId: string; version: number }>;

/** `record` is the task after the decision, for the asker's own auth key. */
export interface AskOutcome {
  decision: AskDecision;
  record: TaskRecord | null;
}

export interface AnswerInput {
  authKey: string;
  taskId: string;
  /** key → the requestor's result for that input request (an ElicitResult, …). */
  responses: Readonly<Record<string, unknown>>;
  now: Millis;
  correlationId: string;
}

export interface AnswerOutcome {
  /**
   * `APPLY_ANSWER` when at least one answer was stored (the task went back to `working` if
   * nothing is left outstanding); `IGNORE_ANSWER` when none was; else why the task is out of
   * reach (a miss, or `BLOCK_TERMINAL`).
   */
  decision: 'APPLY_ANSWER' | 'IGNORE_ANSWER' | MissDecision | 'BLOCK_TERMINAL';
  /** The decision for each key answered (empty for a task out of reach). */
  keys: Record<string, AnswerDecision>;
  record: TaskRecord | null;
}

export type InputsOutcome = { decision: 'FOUND'; inputs: StoredInput[] } | { decision: MissDecision; inputs: null };

/**
 * The input role: a running task asks its requestor and waits, durably; the requestor answers
 * through any process. Asking is one fenced write; each answer one conditional write bound to
 * the task's auth key; the decisions are the core's `decideAsk` and `decideAnswer`.
 */
export interface TaskInputs {
  /**
   * Stores the questions (keys new for the task's lifetime) and sets the task `input_required`
   * (version + 1), with an audit line, in one transaction.
   */
  ask(input: AskInput): Promise<AskOutcome>;
  /**
   * Stores each applicable answer; when no question is left outstanding the task returns to
   * `working` (version + 1, attempt count back to 0, no lease, its outbox entry due at once) so
   * that a worker runs it on. One audit line per key, with the record as the answer left it.
   */
  answer(input: AnswerInput): Promise<AnswerOutcome>;
  /** The caller's task's questions, in ask order, answered and outstanding. */
  inputs(input: TaskRef & { now: Millis }): Promise<InputsOutcome>;
}

/**
 * Progress a running task reported (`ctx.reportProgress`), on its way to requestors connected to
 * other processes. Best effort, unlike a status: it may be coalesced with the task's next
 * progress or lost, and it is never stored as a fact of the task.
 */
export interface ProgressEvent {
  taskId: string;
  /** The task's version held by the run that reported it. */
  version?: number;
  progress: number;
  total?: number;
  message?: string;
  /** Who published it (a service's random id): a process hearing its own progress come back drops it. */
  origin: string;
}

/** The upkeep role: audit trail, expiry, seeding, change notifications, progress, shared secret. */
export interface TaskUpkeep {
  /**
   * Counts a decision made outside a store write (blocks, reads) in the aggregated audit: one row
   * per (task, auth key, surface, decision, hour), see read-audit.ts.
   */
  recordDecision(entry: AuditEntry): Promise<void>;
  /** The audit trail of one task, exact lines and aggregated rows, oldest first (`mergeTrail`). */
  auditTrail(input: { taskId: string }): Promise<AuditEntry[]>;
  /**
   * One retention batch: removes up to `limit` tasks past retention (`isPastRetention`: expired
   * `retentionMs` ago, or finished that long ago without a ttl) with their outbox entries,
   * questions and audit rows, then (when fewer than `limit` tasks were due) up to `limit` audit rows of each table older than the
   * retention whose task is gone (or that named none). With `retentionMs` 0 an expired task goes
   * at once. A task past its expiry and not yet removed answers every caller as expired.
   */
  sweepExpired(input: { now: Millis; limit: number; retentionMs: number }): Promise<SweepOutcome>;
  /**
   * Ends up to `limit` tasks whose outstanding question is past its deadline (`overdueQuestion`
   * on a task `awaitsInput`): one conditional write each, on the status and version read, to
   * `failed` with `deadlineOutcome`, lease cleared, outbox entry closed, one audit line (and the
   * change notification where the store sends them). A task that moved in between is left for
   * the next pass. Returns the tasks it ended.
   */
  failOverdueInputs(input: { now: Millis; limit: number; correlationId: string }): Promise<OverdueOutcome>;
  /**
   * Imports records as they are (replay seeding, migrations between stores), then `inputs`, the
   * questions of those tasks as they are (answered when `answeredAt` is set), each replacing a
   * stored one of the same task and key, then `steps`, journal rows as they are, each replacing
   * the stored rows of the same task at its position or with its name.
   */
  seed(records: readonly TaskRecord[], inputs?: readonly StoredInput[], steps?: readonly StepRecord[]): Promise<void>;
  /**
   * Calls `onChange(taskId, version)` whenever another process changes a task record (stores
   * whose `supports.listenNotify` is true; the others never call it), with the record as that
   * process committed it when the change made the task terminal and the store carries it
   * (final: no later write changes it), and `onChange(null)` when
   * changes may have been missed (the connection was lost and is back). Resolves once
   * listening; the returned function stops. `onProgress` hears the progress any process
   * publishes (`publishProgress`, this process's own included) on the same feed. A change that
   * `options.knows` says the caller knows already (its own write coming back) need not be
   * reported.
   */
  listen(
    onChange: (taskId: string | null, version?: number, record?: TaskRecord) => void,
    onError?: (error: Error) => void,
    onProgress?: (event: ProgressEvent) => void,
    options?: ListenOptions,
  ): Promise<() => Promise<void>>;
  /**
   * Passes a running task's progress to the listeners of every process (`listen`), best effort:
   * it returns at once, never throws and never holds up a status write. The message is clipped
   * and a task's bursts are coalesced (its latest progress wins), so that a chatty handler
   * cannot flood the channel; a task's pending progress goes out ahead of its next change
   * notification. Stores that are not shared between processes drop it.
   */
  publishProgress(event: ProgressEvent): void;
  /**
   * Where the store reports what it could not do and could not throw to anyone (audit lines it
   * had to drop); the runtime points it at its logger. Stores with nothing to report ignore it.
   */
  onProblem?: ((message: string, fields: Record<string, unknown>) => void) | undefined;
  /** A secret shared by every process on this store (cursor signing). */
  sharedSecret(): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * The store interface: domain operations, each atomic, in its roles (the operator's reads in
 * `task-operations.ts`). The core decides; the store applies the decision in one conditional
 * write and, when that write changes nothing, reads the stored fact and classifies it with the
 * same rules. Every operation that touches tasks carries the auth key in its query.
 */
export interface TaskStore extends TaskRecords, TaskDispatch, TaskInputs, TaskSteps, TaskEventBox, TaskUpkeep, TaskOperations, WorkerVersions, TaskChildren {
  readonly kind: string;
  /** The database driver it runs on, where there is a choice (SQLite: `better-sqlite3` or `node:sqlite`). */
  readonly driver?: string;
  readonly supports: StoreCapabilities;
  /** SQL stores: the migrations their `open` applied (they migrate on first use). */
  readonly migrationsApplied?: readonly string[];
}
