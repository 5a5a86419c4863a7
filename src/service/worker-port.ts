import type { InputRequest, StoredInput } from '../core/input-rules.js';
import type { StepRecord, StepWrite } from '../core/step-rules.js';
import type { Millis, TaskRecord, WireRequest } from '../core/types.js';
import type { VersionAnnouncement } from '../core/version-rules.js';
import type {
  AdmitOutcome,
  AskOutcome,
  ClaimInput,
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
import type { TaskLimits } from './limits.js';
import type { TaskEvents } from './task-events.js';

/** A claim as a worker asks for it: the service adds the time, the correlation id and, unless named, its app. */
export type ClaimRequest = Omit<ClaimInput, 'now' | 'correlationId'>;

/** A run's questions to its requestor; `timeoutMs` gives each a deadline that long after now. */
export interface AskRequest {
  fence: Fence;
  askSeq: number;
  /** The ask's place among the run's steps, sleeps and asks (its journal position). */
  position?: number;
  questions: ReadonlyArray<{ key: string; request: InputRequest }>;
  timeoutMs?: number;
}

/**
 * One step of a run's journal, written under the run's fence; with `suspend` the same write
 * suspends the task until `wakeAt` (a sleep, a durable retry) with that status message.
 */
export interface RecordStepRequest {
  fence: Fence;
  step: StepWrite;
  suspend?: { wakeAt: Millis; statusMessage: string } | null;
  /** An event wait's type, when the write suspends the task in one (`RecordStepInput.eventType`). */
  eventType?: string | null;
}

/**
 * The few things a worker needs of the task service, and no more: take due tasks (`claim`),
 * keep or give back a lease (`heartbeat`, `release`), write its own task under its fence
 * (`setStatus`, `ask`, `recordStep`, and one terminal write, `complete` or `fail`), and look
 * at its task (`lookup`, `lookupInputs`, `lookupSteps`). Every write names the fence; a write refused by it is the store's
 * classified decision, never an exception. The guard's `worker` part (`WorkerSurface`) is one; a test can pass a fake.
 */
export interface WorkerPort {
  /** The app whose tasks this service admits: a worker's default, and the only one an admission may lease to. */
  readonly app: string;
  readonly limits: Pick<TaskLimits, 'pollInterval' | 'maxResultBytes' | 'maxStepBytes' | 'maxJournalSteps' | 'maxJournalBytes'>;
  /** Whether other processes may write unnoticed (`shared` without `listenNotify`): the poll is then short. */
  readonly supports: Pick<StoreCapabilities, 'shared' | 'listenNotify'>;
  /** Change events: an idle worker wakes on any, a run watches its own task. */
  readonly changes: Pick<ChangeFeed, 'subscribe' | 'subscribeAll'>;
  /** Where a run tells its end and its failed heartbeats. */
  readonly events: Pick<TaskEvents, 'emit'>;
  /** Where a worker offers its free slots to this process's admissions. */
  readonly admissionClaims: Pick<AdmissionClaimers, 'offer'>;
  now(): Millis;
  /** Leases due tasks to `owner`; each record is at the version the claim wrote (the run's fence). */
  claim(input: ClaimRequest): Promise<TaskRecord[]>;
  /** Extends a held lease; false when the fence no longer holds. */
  heartbeat(input: { fence: Fence; leaseMs: number }): Promise<boolean>;
  /** Gives a held lease back, so that the task is due again at once. */
  release(input: { fence: Fence }): Promise<boolean>;
  /** Sets the status message of a working task (null: clears it). */
  setStatus(input: { fence: Fence; message: string | null }): Promise<TransitionOutcome>;
  /** The terminal write of a run whose handler returned a result: the task ends `completed` (`statusMessage` null: its message cleared). */
  complete(input: { fence: Fence; result: unknown; statusMessage?: null }): Promise<TransitionOutcome>;
  /** The terminal write of a run whose handler failed (an `isError` result or a JSON-RPC error): the task ends `failed`. */
  fail(input: { fence: Fence; result: unknown; statusMessage?: null }): Promise<TransitionOutcome>;
  /** Stores a run's questions; the task goes `input_required`. */
  ask(input: AskRequest): Promise<AskOutcome>;
  /** Records one step of the run's journal (see `TaskStore.recordStep`), bounded by `limits.maxStepBytes` and the journal's bounds. */
  recordStep(input: RecordStepRequest): Promise<RecordStepOutcome>;
  /** Takes the event for the run's wait at `position` (see `TaskStore.takeEvent`), at the service's now. */
  takeEvent(input: { fence: Fence; type: string; position: number }): Promise<TakeEventOutcome>;
  /**
   * Parks the run's task (see `TaskStore.park`): its handler disagrees with the journal; the task
   * stays working, without a lease, due again after the backoff, its status message saying `reason`.
   */
  park(input: { fence: Fence; reason: string }): Promise<ParkOutcome>;
  /** The stored fact of a task for its own auth key: no decision, no audit line. */
  lookup(input: { auth: string; taskId: string }): Promise<LookupOutcome>;
  /** The stored questions of a task for its own auth key; none when it is out of reach. */
  lookupInputs(input: { auth: string; taskId: string }): Promise<StoredInput[]>;
  /** The journal of a task for its own auth key, in position order; none when it is out of reach. */
  lookupSteps(input: { auth: string; taskId: string }): Promise<StepRecord[]>;
  /**
   * Admits a child task of a running task (`ctx.step.runTool`) through the guard, as any
   * admission of the parent's principal: idempotency by `idempotencyKey`, the caller's bounds,
   * the parent recorded, a ttl that ends no later than the parent's. Absent: this port starts none.
   */
  startChild?(input: ChildAdmission): Promise<AdmitOutcome>;
  /** A child that ended wakes its parent waiting without a run (`TaskChildren.wakeParent`); best effort. */
  wakeParent?(input: { taskId: string }): Promise<void>;
  /** Writes or renews the worker's announcement of its tools' versions (`WorkerVersions.announceVersions`) at the service's now. */
  announceVersions(input: VersionAnnounceRequest): Promise<void>;
  /** Removes the worker's announcements: it stops. */
  withdrawVersions(input: { app: string; workerId: string }): Promise<void>;
  /** The app's announcements renewed within `silenceMs`, and the now they were judged at. */
  liveVersions(input: { app: string; silenceMs: number }): Promise<{ now: Millis; announcements: VersionAnnouncement[] }>;
}

/** A child task as a running parent asks for it (`WorkerPort.startChild`). */
export interface ChildAdmission {
  parent: Pick<TaskRecord, 'taskId' | 'authKey' | 'expiresAt'>;
  tool: string;
  /** The child's `tools/call` request as stored (its digest is the idempotency check's). */
  request: WireRequest;
  idempotencyKey: string;
}

/** A worker's announcement as it asks for it: the service adds the time; rows silent for `forgetAfterMs` are removed with it. */
export interface VersionAnnounceRequest {
  app: string;
  workerId: string;
  versions: ReadonlyArray<{ tool: string; version: string }>;
  forgetAfterMs: number;
}
