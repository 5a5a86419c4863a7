import { TasklatchError } from '../../core/errors.js';
import type { StoredInput } from '../../core/input-rules.js';
import type { StepRecord } from '../../core/step-rules.js';
import type { Fence, Millis, TaskRecord } from '../../core/types.js';
import { AuditWriter } from '../audit-writer.js';
import { BackgroundCheckpoints } from './checkpoints.js';
import { ProgressBuffer } from '../progress-buffer.js';
import type { AuditTally, OperatorPage, OperatorPosition, RetentionDue, SchemaState, TaskFilter, TaskInspection, TaskStats } from '../task-operations.js';
import type {
  AdmitInput,
  AdmitOutcome,
  AnnounceVersionsInput,
  AnswerInput,
  AnswerOutcome,
  AskInput,
  AskOutcome,
  AuditEntry,
  CancelInput,
  CancelOutcome,
  ClaimInput,
  InputsOutcome,
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
  VersionAnnouncement,
} from '../types.js';
import type { ParkedCount, ParkInput, ParkOutcome } from '../task-steps.js';
import { auditTrailIn, prepareAuditStatements, retentionDueIn, sweepIn, upsertReadAuditIn } from './audit.js';
import { openDatabase, sqliteDriver, type SqliteConnectionOptions } from './connection.js';
import { claimIn, heartbeatIn, pendingIn, releaseIn } from './dispatch.js';
import type { SqliteDatabase } from './driver.js';
import { answerIn, askIn, failOverdueIn, inputsIn, overdueIn, seedInputsIn } from './inputs.js';
import { ChangeListener } from './listener.js';
import { parkedIn, parkIn, prepareParkStatements, type ParkStatements } from './park.js';
import { prepareEventStatements, sendEventIn, takeEventIn, wakeIfPending, type EventStatements } from './events.js';
import type { SendEventInput, SendEventOutcome, TakeEventInput, TakeEventOutcome } from '../task-event-box.js';
import { childTasksIn, prepareChildrenStatements, wakeParentIn, type ChildrenStatements } from './children.js';
import { journalIn, prepareStepStatements, recordStepIn, seedStepsIn, sleepingIn, stepsIn, type StepStatements } from './steps.js';
import { migrateSqlite } from './migrate.js';
import { auditTallyIn, findTasksIn, inspectTaskIn, schemaStateOf, taskStatsIn } from './operations.js';
import { ProgressWriter } from './progress.js';
import { getIn, listIn, visibleTaskIdsIn } from './reads.js';
import { ReadBatcher } from './read-batcher.js';
import { RecordCache } from './record-cache.js';
import { prepareStatements, type Statements } from './statements.js';
import { admitIn, cancelIn, seedTasksIn, transitionIn } from './task-writes.js';
import { inTransaction } from './transactions.js';
import { WriteBatcher } from './write-batcher.js';
import { announceVersionsIn, liveVersionsIn, prepareVersionStatements, withdrawVersionsIn, type VersionStatements } from './versions.js';
import { refuseUnstorable, unstorableRefusal } from '../storable.js';

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions extends SqliteConnectionOptions {
  /**
   * Checkpoints of the write-ahead log on a thread of their own (default true), not in the commit
   * that fills it, which holds the event loop through two `fsync`s (see checkpoints.ts).
   */
  backgroundCheckpoints?: boolean;
}

/**
 * A store in one SQLite file, shared safely by several processes. Every write runs in a
 * `BEGIN IMMEDIATE` transaction: the write lock is taken before the first read, so two processes
 * can never both read "version 3, working" and both write. Inside it, the core decides and the
 * store applies the decision in one conditional statement; a zero-row write is classified by
 * re-reading the row with the core's rules.
 */
export class SqliteStore implements TaskStore {
  readonly kind = 'sqlite';
  readonly driver: string;
  readonly supports: StoreCapabilities;

  private readonly sql: Statements;
  /** Rows a `get` may answer again while the file is unchanged (see RecordCache). */
  private readonly rows: RecordCache;
  /** The `get`s of one turn of the event loop, answered against one stamp of the file. */
  private readonly reads: ReadBatcher;
  /** Admissions of one turn of the event loop, committed together. */
  private readonly admissions: WriteBatcher;
  private readonly audit: ReturnType<typeof prepareAuditStatements>;
  private readonly stepSql: StepStatements;
  private readonly eventSql: EventStatements;
  private readonly versionSql: VersionStatements;
  private readonly parkSql: ParkStatements;
  private readonly childrenSql: ChildrenStatements;
  private secret: Uint8Array | null = null;
  private readonly listeners = new Set<ChangeListener>();
  private readonly auditWriter: AuditWriter;
  /** Running tasks' progress for the other processes on this file (null: an in-memory database has none). */
  private readonly progress: ProgressBuffer | null;
  /** The log's checkpoints on the process's checkpoint thread (null: in the commits, or an in-memory database). */
  readonly checkpoints: BackgroundCheckpoints | null;
  /** Where the store reports what it could not do and could not throw (audit lines dropped); the runtime sets its logger here. */
  onProblem: ((message: string, fields: Record<string, unknown>) => void) | undefined;

  private constructor(
    /** The connection, on either driver (inspection and tests; writes should go through the store). */
    readonly db: SqliteDatabase,
    /** Migrations this `open` applied (empty when the schema was current). */
    readonly migrationsApplied: readonly string[] = [],
    backgroundCheckpoints = true,
  ) {
    this.sql = prepareStatements(db);
    this.rows = new RecordCache(db);
    this.admissions = new WriteBatcher(db);
    this.reads = new ReadBatcher(
      () => this.rows.stamp(),
      (ref, stamp) => getIn(this.db, this.sql, this.rows, ref, stamp),
    );
    this.audit = prepareAuditStatements(db);
    this.stepSql = prepareStepStatements(db);
    this.eventSql = prepareEventStatements(db);
    this.versionSql = prepareVersionStatements(db);
    this.parkSql = prepareParkStatements(db);
    this.childrenSql = prepareChildrenStatements(db);
    // Read decisions are appended off the reply path, many lines to one transaction: a poll does
    // not take the file's write lock for its audit line, and a burst of polls commits once.
    this.auditWriter = new AuditWriter(
      async (batch) => {
        // Counts only: no row of `tasks` changes, so the rows `get` keeps stay current.
        this.write(() => this.rows.outsideTasks(() => upsertReadAuditIn(this.audit, batch)));
      },
      {
        // A constraint or type error belongs to the lines; busy, locked or I/O to the database.
        isLineError: (error) => /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(String((error as { code?: unknown } | null)?.code)),
        onProblem: (message, fields) => this.onProblem?.(message, fields),
      },
    );
    this.driver = sqliteDriver().name;
    // A file's other connections are seen by polling it; an in-memory database has none.
    this.supports = { listenNotify: !db.memory, shared: true };
    const progress = db.memory ? null : new ProgressWriter(db, (message, fields) => this.onProblem?.(message, fields));
    this.progress = progress === null ? null : new ProgressBuffer((events) => progress.write(events));
    this.checkpoints = db.memory || !backgroundCheckpoints ? null : new BackgroundCheckpoints(db, (message, fields) => this.onProblem?.(message, fields));
  }

  /**
   * Opens (creating if needed) the database file at `path`, sets WAL mode and applies pending
   * migrations. A path that cannot be opened raises `STORE_UNAVAILABLE` naming the path.
   */
  static async open(path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    return openDatabase(path, options, async (db) => new SqliteStore(db, await migrateSqlite(db), options.backgroundCheckpoints));
  }

  // The records role (TaskRecords): task-writes.ts, reads.ts.

  admit(input: AdmitInput): Promise<AdmitOutcome> {
    const refused = unstorableRefusal('admit', input);
    if (refused !== null) return Promise.reject(refused);
    return this.admissions.run(() => admitIn(this.sql, input));
  }

  async transition(input: TransitionInput): Promise<TransitionOutcome> {
    refuseUnstorable('transition', input);
    const out = this.write(() => transitionIn(this.sql, input));
    // After the status, never before it or in its transaction; a listener reads both in one poll
    // and reports the progress first (see ChangeListener).
    this.progress?.flush([input.taskId]);
    return out;
  }

  get(ref: TaskRef & { now: Millis }): Promise<LookupOutcome> {
    const refused = unstorableRefusal('get', ref);
    if (refused !== null) return Promise.reject(refused);
    return this.reads.get(ref);
  }

  async visibleTaskIds(input: { authKey: string; taskIds: readonly string[]; now: Millis }): Promise<string[]> {
    refuseUnstorable('visibleTaskIds', input);
    return visibleTaskIdsIn(this.sql, input);
  }

  async cancel(input: CancelInput): Promise<CancelOutcome> {
    refuseUnstorable('cancel', input);
    return this.write(() => cancelIn(this.sql, input));
  }

  async list(page: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): Promise<ListPage> {
    refuseUnstorable('list', page);
    return listIn(this.sql, page);
  }

  // The children role (TaskChildren): children.ts.

  readonly childTasks = async (input: { authKey: string; taskId: string }): Promise<TaskRecord[]> => childTasksIn(this.childrenSql, input);
  readonly wakeParent = async (input: { taskId: string; now: Millis }): Promise<string | null> => this.write(() => wakeParentIn(this.childrenSql, input));

  // The dispatch role (TaskDispatch): dispatch.ts.

  async claim(input: ClaimInput): Promise<TaskRecord[]> {
    refuseUnstorable('claim', input);
    return this.write(() => claimIn(this.sql, input));
  }

  async heartbeat({ fence, now, leaseMs }: { fence: Fence; now: Millis; leaseMs: number }): Promise<boolean> {
    refuseUnstorable('heartbeat', fence);
    return this.write(() => heartbeatIn(this.sql, fence, now, leaseMs));
  }

  async release({ fence, now, correlationId }: { fence: Fence; now: Millis; correlationId: string }): Promise<boolean> {
    refuseUnstorable('release', { fence, correlationId });
    return this.write(() => releaseIn(this.sql, fence, now, correlationId));
  }

  readonly pendingDispatch = async (): Promise<number> => pendingIn(this.sql);

  // The worker versions role (WorkerVersions): versions.ts. No row of `tasks` changes, so the rows `get` keeps stay current.

  async announceVersions(input: AnnounceVersionsInput): Promise<void> {
    this.write(() => this.rows.outsideTasks(() => announceVersionsIn(this.versionSql, input)));
  }

  async withdrawVersions(input: { app: string; workerId: string }): Promise<void> {
    this.write(() => this.rows.outsideTasks(() => withdrawVersionsIn(this.versionSql, input)));
  }

  readonly liveVersions = async (input: { app?: string; now: Millis; silenceMs: number }): Promise<VersionAnnouncement[]> =>
    liveVersionsIn(this.versionSql, input);

  // The input role (TaskInputs): inputs.ts.

  async ask(input: AskInput): Promise<AskOutcome> {
    refuseUnstorable('ask', input);
    return this.write(() => askIn(this.db, this.sql, input));
  }

  async answer(input: AnswerInput): Promise<AnswerOutcome> {
    refuseUnstorable('answer', input);
    return this.write(() => answerIn(this.sql, input));
  }

  async recordStep(input: RecordStepInput): Promise<RecordStepOutcome> {
    refuseUnstorable('recordStep', input);
    const out = this.write(() => {
      const recorded = recordStepIn(this.sql, this.stepSql, input);
      // A run that records a step got past the point its task parked at.
      if (recorded.decision === 'APPLY_STEP') this.parkSql.unpark.run(input.fence.taskId);
      // A wait that suspends with an event of its type already pending is due at once.
      const { eventType } = input;
      if (recorded.decision === 'APPLY_STEP' && input.suspend && eventType != null && wakeIfPending(this.eventSql, input.fence.taskId, eventType, input.now))
        recorded.dueNow = true;
      return recorded;
    });
    // A suspension is a change of the task: its progress goes out first, as after a status write.
    if (input.suspend) this.progress?.flush([input.fence.taskId]);
    return out;
  }

  async sendEvent(input: SendEventInput): Promise<SendEventOutcome> {
    refuseUnstorable('sendEvent', input);
    return this.write(() => sendEventIn(this.sql, this.eventSql, input));
  }

  readonly takeEvent = async (input: TakeEventInput): Promise<TakeEventOutcome> => this.write(() => takeEventIn(this.sql, this.eventSql, input));

  async steps(ref: TaskRef & { now: Millis }): Promise<StepsOutcome> {
    refuseUnstorable('steps', ref);
    return this.db.transaction(() => stepsIn(this.sql, this.stepSql, ref)).deferred();
  }

  readonly taskSteps = async ({ taskId }: { taskId: string }): Promise<StepRecord[]> => journalIn(this.stepSql, taskId);
  readonly sleepingTasks = async ({ now }: { now: Millis }): Promise<number> => sleepingIn(this.stepSql, now);

  async park(input: ParkInput): Promise<ParkOutcome> {
    refuseUnstorable('park', input);
    const out = this.write(() => parkIn(this.sql, this.parkSql, input));
    // A park changes the task as a suspension does: its progress goes out first.
    this.progress?.flush([input.fence.taskId]);
    return out;
  }

  readonly parkedTasks = async ({ now }: { now: Millis }): Promise<ParkedCount[]> => parkedIn(this.parkSql, now);

  async inputs(ref: TaskRef & { now: Millis }): Promise<InputsOutcome> {
    refuseUnstorable('inputs', ref);
    // One snapshot for the visibility read and the questions, as in `get`.
    return this.db.transaction(() => inputsIn(this.sql, ref)).deferred();
  }

  // Upkeep (TaskUpkeep): audit.ts, inputs.ts (deadlines), listener.ts, progress.ts.

  /** Counted and upserted in batches off the reply path: see {@link AuditWriter}. */
  async recordDecision(entry: AuditEntry): Promise<void> {
    this.auditWriter.count(entry);
  }

  async auditTrail({ taskId }: { taskId: string }): Promise<AuditEntry[]> {
    await this.auditWriter.drain();
    return this.db.transaction(() => auditTrailIn(this.audit, taskId)).deferred();
  }

  async sweepExpired(input: { now: Millis; limit: number; retentionMs: number }): Promise<SweepOutcome> {
    // Rows still queued for a task about to go would come back as orphans after it.
    await this.auditWriter.drain();
    return this.write(() => sweepIn(this.audit, input));
  }

  async failOverdueInputs({ now, limit, correlationId }: { now: Millis; limit: number; correlationId: string }): Promise<OverdueOutcome> {
    // Read, then one write transaction per task: a long pass never holds the write lock for
    // long, and each write checks the version read.
    const due = this.db.transaction(() => overdueIn(this.sql, now, limit)).deferred();
    const ended: OverdueOutcome = [];
    for (const task of due) {
      const failed = this.write(() => failOverdueIn(this.sql, task, now, correlationId));
      if (failed !== null) ended.push(failed);
    }
    return ended;
  }

  async seed(records: readonly TaskRecord[], inputs: readonly StoredInput[] = [], steps: readonly StepRecord[] = []): Promise<void> {
    this.write(() => {
      seedTasksIn(this.sql, records);
      seedInputsIn(this.sql, inputs);
      seedStepsIn(this.stepSql, steps);
    });
  }

  async sharedSecret(): Promise<Uint8Array> {
    if (this.secret === null) {
      const hex = (this.sql.selectSecret.get() as { value: string } | undefined)?.value;
      if (hex === undefined) throw new TasklatchError('SCHEMA_MISMATCH', 'tasklatch_meta has no secret; run the migrations');
      this.secret = Buffer.from(hex, 'hex');
    }
    return this.secret;
  }

  /**
   * Reports the record changes any connection commits to this file (see {@link ChangeListener}),
   * polling a dedicated read connection; the returned function stops it, and so does `close`.
   */
  async listen(
    onChange: (taskId: string | null, version?: number) => void,
    onError: (error: Error) => void = () => undefined,
    onProgress?: (event: ProgressEvent) => void,
  ): Promise<() => Promise<void>> {
    if (!this.supports.listenNotify) return async () => undefined;
    const listener = ChangeListener.start(this.db.name, onChange, onError, onProgress ?? null);
    this.listeners.add(listener);
    return async () => {
      this.listeners.delete(listener);
      listener.close();
    };
  }

  /** A row of `task_progress` for the file's other connections, coalesced (see `ProgressBuffer`, `ProgressWriter`). */
  publishProgress(event: ProgressEvent): void {
    this.progress?.add(event);
  }

  async close(): Promise<void> {
    // Admissions and reads asked for before the close are committed and answered, not failed by a closed connection.
    if (this.db.open) this.admissions.commit();
    if (this.db.open) this.reads.answer();
    for (const listener of this.listeners) listener.close();
    this.listeners.clear();
    // What progress still waits is written now; later progress is dropped.
    if (this.db.open) this.progress?.close();
    if (this.db.open) await this.auditWriter.drain(5_000);
    // The thread's connection first: the store's is then the file's last here, and folds the log.
    await this.checkpoints?.close();
    if (this.db.open) this.db.close();
  }

  // The operator's reads (TaskOperations): operations.ts.

  readonly findTasks = async (input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): Promise<OperatorPage> =>
    findTasksIn(this.db, input);
  readonly inspectTask = async ({ taskId }: { taskId: string }): Promise<TaskInspection | null> => inspectTaskIn(this.db, taskId);
  readonly taskStats = async ({ now }: { now: Millis }): Promise<TaskStats> => taskStatsIn(this.db, now);
  readonly schemaState = async (): Promise<SchemaState> => schemaStateOf(this.db);
  readonly auditTally = async ({ after }: { after: number | null }): Promise<AuditTally> => auditTallyIn(this.db, after);

  async retentionDue(input: { now: Millis; retentionMs: number }): Promise<RetentionDue> {
    await this.auditWriter.drain();
    return retentionDueIn(this.audit, input);
  }

  private write<T>(fn: () => T): T {
    return inTransaction(this.db, fn);
  }
}
