import type pg from 'pg';
import type { StoredInput } from '../../core/input-rules.js';
import type { StepRecord } from '../../core/step-rules.js';
import type { Fence, Millis, TaskRecord } from '../../core/types.js';
import { recordKey } from '../change-record.js';
import { AuditWriter } from '../audit-writer.js';
import { ProgressBuffer } from '../progress-buffer.js';
import type { AuditTally, OperatorPage, OperatorPosition, RetentionDue, SchemaState, TaskFilter, TaskInspection, TaskStats } from '../task-operations.js';
import type {
  AdmitInput,
  AnnounceVersionsInput,
  AdmitOutcome,
  AnswerInput,
  AnswerOutcome,
  AskInput,
  AskOutcome,
  AuditEntry,
  CancelInput,
  CancelOutcome,
  ClaimInput,
  InputsOutcome,
  ListenOptions,
  ListPage,
  ListPosition,
  LookupOutcome,
  OverdueOutcome,
  ProgressEvent,
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
import { auditTrailIn, isAuditLineError, retentionDueIn, sweepIn, upsertReadAuditIn } from './audit.js';
import { createPool, parsePostgresUrl, unavailable } from './connection.js';
import { listenConfigIn, listenConfigOf } from './listen-config.js';
import { claimIn, heartbeatIn, pendingIn, releaseIn } from './dispatch.js';
import { announceVersionsIn, liveVersionsIn, withdrawVersionsIn } from './versions.js';
import { answerIn, askIn, failOverdueIn, inputsIn, seedInputsIn } from './inputs.js';
import { ChangeListener, ChangeNotifier, type Change } from './listener.js';
import { migratePostgres } from './migrate.js';
import { childTasksIn, wakeParentIn } from './children.js';
import { auditTallyIn, findTasksIn, inspectTaskIn, schemaStateOf, secretIn, taskStatsIn } from './operations.js';
import { encodedProgress } from './progress.js';
import { ReadBatcher } from './read-batcher.js';
import { getIn, listIn, visibleTaskIdsIn } from './reads.js';
import { parkedIn, parkIn } from './park.js';
import { sendEventIn, takeEventIn } from './events.js';
import type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome } from '../task-event-box.js';
import { journalIn, recordStepIn, seedStepsIn, sleepingIn, stepsIn } from './steps.js';
import { admitIn, cancelIn, seedTasksIn, transitionIn } from './task-writes.js';
import { Announcer, changeOf, endsTask, type TerminalAnnouncement } from './announce.js';
import { inTransaction } from './transactions.js';
import { WriteBatcher, type WriteBatcherOptions } from './write-batcher.js';
import { refuseUnstorable } from '../storable.js';

/** Options of {@link PostgresStore.open}. */
export interface PostgresStoreOptions {
  poolSize?: number; // most connections the store opens at once (default 20)
  /** Group commit of admissions, status writes, cancellations and fresh steps ({@link WriteBatcher}): batches at the server at once (default 2; `inFlight: 1` batches most). */
  writeBatch?: WriteBatcherOptions;
  /** A direct URL to LISTEN on when the store URL has `pgbouncer=true` (listen-config.ts); without one, waiters poll. */
  listenUrl?: string;
}

/**
 * A store in PostgreSQL, shared by every process that opens the same database and schema.
 * Each operation is one transaction whose guarded write is a single conditional statement;
 * the decisions themselves come from the core's rules, which the guards restate.
 */
export class PostgresStore implements TaskStore {
  readonly kind = 'postgres';
  readonly driver = 'pg';
  readonly supports: StoreCapabilities;

  private secret: Promise<Uint8Array> | null = null;
  /** Seals the terminal records notifications carry (see change-record.ts); set by `open`. */
  private recordKey: Buffer | null = null;
  private closed: Promise<void> | null = null;
  private readonly auditWriter: AuditWriter;
  /** Tells other processes of this store's committed changes, after each commit (see {@link ChangeNotifier}). */
  private readonly notifier: ChangeNotifier;
  /** Concurrent admissions, status writes and cancellations share a transaction. */
  private readonly writes: WriteBatcher;
  /** Concurrent `tasks/get` reads share a statement. */
  private readonly reads: ReadBatcher;
  /** Running tasks' progress, coalesced per task, on its way out with the change notifications. */
  private readonly progress: ProgressBuffer;
  /** Which writes that end a task announce it from inside their transaction (announce.ts). */
  private readonly announcer: Announcer;
  /** Where the store reports what it could not do and could not throw (audit lines dropped); the runtime sets its logger here. */
  onProblem: ((message: string, fields: Record<string, unknown>) => void) | undefined;

  private constructor(
    /** The pool; exposed for tests and for workers built on the same connections. */
    readonly pool: pg.Pool,
    /**
     * A small pool for audit lines written outside any other write (read decisions, blocked
     * requests), in batches off the reply path: its sessions commit asynchronously. A server
     * crash (not a clean restart) can lose the last few hundred milliseconds of such lines; task
     * records and every decision written with them keep synchronous commit.
     */
    private readonly auditPool: pg.Pool,
    /** Migrations this `open` applied (empty when the schema was current). */
    readonly migrationsApplied: readonly string[],
    writeBatch: WriteBatcherOptions,
    private readonly listenConfig: pg.ClientConfig | null,
  ) {
    this.supports = { listenNotify: listenConfig !== null, shared: true, claimsOnAdmit: true };
    // The audit pool commits asynchronously: a notification needs no flush of its own.
    this.notifier = new ChangeNotifier(auditPool, (message, fields) => this.onProblem?.(message, fields));
    this.writes = new WriteBatcher(pool, writeBatch, () => this.notifier.idle());
    this.reads = new ReadBatcher(pool);
    this.progress = new ProgressBuffer((events) => this.notifier.notify([], encodedProgress(events)));
    this.announcer = new Announcer(() => this.recordKey, this.progress);
    this.auditWriter = new AuditWriter(
      async (batch) => {
        await upsertReadAuditIn(auditPool, batch);
      },
      {
        isLineError: isAuditLineError,
        onProblem: (message, fields) => this.onProblem?.(message, fields),
      },
    );
  }

  /**
   * Connects to `url` (`postgres://…`; `?schema=NAME` puts tasklatch's tables in a schema of
   * their own, created on demand) and applies pending migrations. An unreachable server or a
   * refused login throws `STORE_UNAVAILABLE` naming host:port.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const target = parsePostgresUrl(url);
    const listenConfig = listenConfigOf(target, options.listenUrl);
    const pool = createPool(target, options.poolSize ?? 20);
    let applied: string[];
    try {
      const client = await pool.connect().catch((cause: unknown) => {
        throw unavailable(target, cause);
      });
      client.release();
      applied = await migratePostgres(url);
    } catch (error) {
      await pool.end();
      throw error;
    }
    const auditPool = createPool(target, 4, ['synchronous_commit=off']);
    const store = new PostgresStore(pool, auditPool, applied, options.writeBatch ?? {}, listenConfig);
    // Terminal records travel sealed under a key of the schema's secret; without one they do not travel.
    store.recordKey = recordKey(
      await store.sharedSecret().catch(async (error: unknown) => {
        await store.close();
        throw error;
      }),
    );
    return store;
  }

  // The records role (TaskRecords): task-writes.ts, reads.ts.

  async admit(input: AdmitInput): Promise<AdmitOutcome> {
    refuseUnstorable('admit', input);
    const out = await admitIn(this.pool, this.writes, input);
    // Leased to this process's worker as admitted, the task is no other process's news: none can wait
    // on it before this answers, nor claim it under the lease (told, each idle worker claimed in vain).
    if (out.decision === 'ACCEPT_TASK') this.announcer.admitted(out.record.taskId);
    if (out.decision === 'ACCEPT_TASK' && out.claimed == null) this.notified([out.record]);
    return out;
  }

  async transition(input: TransitionInput): Promise<TransitionOutcome> {
    refuseUnstorable('transition', input);
    const announced = endsTask(input.write.status) ? this.announcer.ending(input.taskId) : undefined;
    const out = await transitionIn(this.pool, this.writes, input, announced);
    if (out.decision === 'APPLY_TRANSITION' && out.record !== null) this.notified([out.record], announced);
    return out;
  }

  async get(ref: TaskRef & { now: Millis }): Promise<LookupOutcome> {
    refuseUnstorable('get', ref);
    return getIn(this.pool, this.reads, ref);
  }

  async visibleTaskIds(input: { authKey: string; taskIds: readonly string[]; now: Millis }): Promise<string[]> {
    refuseUnstorable('visibleTaskIds', input);
    return visibleTaskIdsIn(this.pool, input);
  }

  async cancel(input: CancelInput): Promise<CancelOutcome> {
    refuseUnstorable('cancel', input);
    const announced = this.announcer.ending(input.taskId);
    const out = await cancelIn(this.pool, this.writes, input, announced);
    if (out.decision === 'CANCEL_TASK') this.notified([out.record], announced);
    return out;
  }

  async list(page: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): Promise<ListPage> {
    refuseUnstorable('list', page);
    return listIn(this.pool, page);
  }

  readonly childTasks = async (input: { authKey: string; taskId: string }): Promise<TaskRecord[]> => childTasksIn(this.pool, input);

  /** children.ts; a woken parent is announced so that an idle worker of any process claims it. */
  async wakeParent(input: { taskId: string; now: Millis }): Promise<string | null> {
    const woken = await wakeParentIn(this.pool, input);
    if (woken !== null) this.notified([woken]);
    return woken?.taskId ?? null;
  }

  // The dispatch role (TaskDispatch): dispatch.ts.

  async claim(input: ClaimInput): Promise<TaskRecord[]> {
    refuseUnstorable('claim', input);
    if (input.limit <= 0) return [];
    const abandoned: Change[] = [];
    const claimed = await claimIn(this.pool, input, abandoned, (message, fields) => this.onProblem?.(message, fields));
    this.notified([...claimed, ...abandoned]);
    return claimed;
  }

  async heartbeat({ fence, now, leaseMs }: { fence: Fence; now: Millis; leaseMs: number }): Promise<boolean> {
    refuseUnstorable('heartbeat', fence);
    return heartbeatIn(this.pool, fence, now, leaseMs);
  }

  async release({ fence, now, correlationId }: { fence: Fence; now: Millis; correlationId: string }): Promise<boolean> {
    refuseUnstorable('release', { fence, correlationId });
    const released = await releaseIn(this.pool, fence, now, correlationId);
    if (released !== null) this.notified([released]);
    return released !== null;
  }

  readonly pendingDispatch = async (): Promise<number> => pendingIn(this.pool);

  // The worker versions role (WorkerVersions): versions.ts.
  readonly announceVersions = (input: AnnounceVersionsInput) => announceVersionsIn(this.pool, input);
  readonly withdrawVersions = (input: { app: string; workerId: string }) => withdrawVersionsIn(this.pool, input);
  readonly liveVersions = (input: { app?: string; now: Millis; silenceMs: number }) => liveVersionsIn(this.pool, input);

  // The input role (TaskInputs): inputs.ts.

  async ask(input: AskInput): Promise<AskOutcome> {
    refuseUnstorable('ask', input);
    const out = await askIn(this.pool, input);
    if (out.decision === 'APPLY_ASK' && out.record !== null) this.notified([out.record]);
    return out;
  }

  async answer(input: AnswerInput): Promise<AnswerOutcome> {
    refuseUnstorable('answer', input);
    const out = await answerIn(this.pool, input);
    if (out.decision === 'APPLY_ANSWER' && out.record !== null) this.notified([out.record]);
    return out;
  }

  async recordStep(input: RecordStepInput): Promise<RecordStepOutcome> {
    refuseUnstorable('recordStep', input);
    const { suspended, ...out } = await recordStepIn(this.pool, this.writes, input);
    // A suspension changes the task (version, lease, status message): told like any status write.
    if (suspended && out.record !== null) this.notified([out.record]);
    return out;
  }

  async steps(ref: TaskRef & { now: Millis }): Promise<StepsOutcome> {
    refuseUnstorable('steps', ref);
    return stepsIn(this.pool, ref);
  }

  async sendEvent(input: SendEventInput): Promise<SendEventOutcome> {
    refuseUnstorable('sendEvent', input);
    const out = await sendEventIn(this.pool, input);
    // Told like a change of the task: a worker looks at the outbox (the waiting task is due).
    if (out.woke && out.record !== null) this.notified([{ taskId: out.record.taskId, version: out.record.version }]);
    return out;
  }

  readonly takeEvent = (input: TakeEventInput): Promise<TakeEventOutcome> => takeEventIn(this.pool, input);
  readonly taskSteps = ({ taskId }: { taskId: string }): Promise<StepRecord[]> => journalIn(this.pool, taskId);
  readonly sleepingTasks = ({ now }: { now: Millis }): Promise<number> => sleepingIn(this.pool, now);

  async park(input: ParkInput): Promise<ParkOutcome> {
    refuseUnstorable('park', input);
    const out = await parkIn(this.pool, input);
    if (out.parked !== null && out.record !== null) this.notified([out.record]);
    return out;
  }

  readonly parkedTasks = ({ now }: { now: Millis }): Promise<ParkedCount[]> => parkedIn(this.pool, now);

  async inputs(ref: TaskRef & { now: Millis }): Promise<InputsOutcome> {
    refuseUnstorable('inputs', ref);
    return inputsIn(this.pool, ref);
  }

  // Upkeep (TaskUpkeep): audit.ts, inputs.ts (deadlines), listener.ts, progress.ts.

  /** Counted and upserted in batches off the reply path: see {@link AuditWriter}. */
  async recordDecision(entry: AuditEntry): Promise<void> {
    this.auditWriter.count(entry);
  }

  async auditTrail({ taskId }: { taskId: string }): Promise<AuditEntry[]> {
    await this.auditWriter.drain();
    return auditTrailIn(this.pool, taskId);
  }

  async sweepExpired(input: { now: Millis; limit: number; retentionMs: number }): Promise<SweepOutcome> {
    // Rows still queued for a task about to go would come back as orphans after it.
    await this.auditWriter.drain();
    return sweepIn(this.pool, input);
  }

  async failOverdueInputs(input: { now: Millis; limit: number; correlationId: string }): Promise<OverdueOutcome> {
    const ended = await failOverdueIn(this.pool, input);
    this.notified(ended);
    return ended;
  }

  async seed(records: readonly TaskRecord[], inputs: readonly StoredInput[] = [], steps: readonly StepRecord[] = []): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await seedTasksIn(client, records);
      await seedInputsIn(client, inputs);
      await seedStepsIn(client, steps);
    });
  }

  /** LISTENs on a dedicated connection for changes (and progress) any process writes to this schema. */
  async listen(
    onChange: (taskId: string | null, version?: number, record?: TaskRecord) => void,
    onError: (error: Error) => void = () => undefined,
    onProgress?: (event: ProgressEvent) => void,
    options: ListenOptions = {},
  ): Promise<() => Promise<void>> {
    const listener = await ChangeListener.start(listenConfigIn(this.listenConfig), onChange, onError, onProgress ?? null, this.recordKey, options);
    const unheed = this.announcer.heeding(options.waitedHere);
    return () => listener.close().finally(unheed);
  }

  /** A NOTIFY on the progress channel, off the write path (see `ProgressBuffer`, `ChangeNotifier`). */
  publishProgress(event: ProgressEvent): void {
    this.progress.add(event);
  }

  async sharedSecret(): Promise<Uint8Array> {
    // Cached as a promise so concurrent first callers share one query.
    this.secret ??= secretIn(this.pool).catch((error: unknown) => {
      this.secret = null;
      throw error;
    });
    return this.secret;
  }

  async close(): Promise<void> {
    // The notifications go out on the audit pool: every one queued before close is sent before it ends.
    // What progress still waits goes out with the last notifications; later progress is dropped.
    this.progress.close();
    this.closed ??= this.writes
      .drain()
      .then(() => this.auditWriter.drain(5_000))
      .then(() => this.notifier.drain())
      .then(() => Promise.all([this.pool.end(), this.auditPool.end()]))
      .then(() => undefined);
    return this.closed;
  }

  // The operator's reads (TaskOperations): operations.ts.

  readonly findTasks = (input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): Promise<OperatorPage> => findTasksIn(this.pool, input);
  readonly inspectTask = ({ taskId }: { taskId: string }): Promise<TaskInspection | null> => inspectTaskIn(this.pool, taskId);
  readonly taskStats = ({ now }: { now: Millis }): Promise<TaskStats> => taskStatsIn(this.pool, now);
  readonly schemaState = (): Promise<SchemaState> => schemaStateOf(this.pool);
  readonly auditTally = ({ after }: { after: number | null }): Promise<AuditTally> => auditTallyIn(this.pool, after);
  async retentionDue(input: { now: Millis; retentionMs: number }): Promise<RetentionDue> {
    await this.auditWriter.drain();
    return retentionDueIn(this.pool, input);
  }

  /**
   * Queues the notifications of committed changes for other processes (and this one's listener);
   * the write returns without waiting for them (see {@link ChangeNotifier}). A write that ended its
   * task may have announced itself inside its transaction already (`announced.sent`, announce.ts);
   * its record travels only where no one here waits on it (`Announcer.recordKeyFor`).
   */
  private notified(changes: readonly (Change | TaskRecord)[], announced?: TerminalAnnouncement): void {
    if (announced?.sent === true) return;
    // A task's waiting progress goes ahead of its change: its last progress is not overtaken by its end.
    const ahead = announced?.taken ?? encodedProgress(this.progress.take(changes.map((c) => c.taskId)));
    this.notifier.notify(
      changes.map((c) => changeOf(c, this.announcer.recordKeyFor(c.taskId))),
      ahead,
    );
  }
}
