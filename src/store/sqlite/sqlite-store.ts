import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { decideAdmission } from '../../core/create-rules.js';
import { resultDigest } from '../../core/digest.js';
import { TasklatchError, isTasklatchError } from '../../core/errors.js';
import { classifyMiss, decideTransition } from '../../core/transition-rules.js';
import { isTaskStatus, isTerminal, type Millis, type TaskRecord } from '../../core/types.js';
import type {
  AdmitInput,
  AdmitOutcome,
  AuditEntry,
  CancelOutcome,
  ClaimInput,
  Fence,
  ListPage,
  ListPosition,
  LookupOutcome,
  StoreCapabilities,
  TaskRef,
  TaskStore,
  TransitionInput,
  TransitionOutcome,
} from '../types.js';
import { claimIn, heartbeatIn, releaseIn } from './dispatch.js';
import { admissionRecord } from '../admission-record.js';
import { migrateSqlite } from './migrate.js';
import { auditToRow, recordToRow, rowToAudit, rowToRecord, toJson, type AuditRow, type TaskRow } from './row.js';
import { prepareStatements, type Statements } from './statements.js';

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions {
  /** How long a write waits for another process's write lock before failing (default 5000). */
  busyTimeoutMs?: number;
}

/**
 * A store in one SQLite file, shared safely by several processes. Every write runs in a
 * `BEGIN IMMEDIATE` transaction: the write lock is taken before the first read, so two processes
 * can never both read "version 3, working" and both write. Inside it, the core decides and the
 * store applies the decision in one conditional statement; a zero-row write is classified by
 * re-reading the row with the same rules MemoryStore uses.
 */
export class SqliteStore implements TaskStore {
  readonly kind = 'sqlite';
  readonly supports: StoreCapabilities = { listenNotify: false, skipLocked: false, shared: true };

  private readonly sql: Statements;
  private secret: Uint8Array | null = null;

  private constructor(
    /** The better-sqlite3 connection (inspection and tests; writes should go through the store). */
    readonly db: Database.Database,
    /** Migrations this `open` applied (empty when the schema was current). */
    readonly migrationsApplied: readonly string[] = [],
  ) {
    this.sql = prepareStatements(db);
  }

  /**
   * Opens (creating if needed) the database file at `path`, sets WAL mode and applies pending
   * migrations. A path that cannot be opened raises `STORE_UNAVAILABLE` naming the path.
   */
  static async open(path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    let db: Database.Database | null = null;
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      // The busy timeout is set by the constructor, before the first pragma: switching a fresh
      // file to WAL takes a lock that a second process opening it at the same moment must wait on.
      db = new Database(path, { timeout: busyTimeoutMs });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
      db.pragma('foreign_keys = ON');
      const applied = await migrateSqlite(db);
      return new SqliteStore(db, applied);
    } catch (error) {
      db?.close();
      if (isTasklatchError(error)) throw error;
      throw new TasklatchError('STORE_UNAVAILABLE', `cannot open SQLite store at ${path}: ${(error as Error).message}`, {
        data: { path },
        cause: error,
      });
    }
  }

  async admit(input: AdmitInput): Promise<AdmitOutcome> {
    return this.write(() => {
      const key = input.idempotencyKey;
      if (key !== null) this.sql.releaseExpiredKey.run({ auth_key: input.authKey, idempotency_key: key, now: input.now });
      if (input.maxActive != null) {
        // The immediate transaction already serializes admissions, so count-then-insert is exact.
        const limited = this.admitOverLimit(input, input.maxActive);
        if (limited !== null) return limited;
      }
      const inserted = this.sql.insertTask.get(recordToRow(admissionRecord(input))) as TaskRow | undefined;
      if (inserted !== undefined) {
        this.sql.insertOutbox.run({ task_id: inserted.task_id, now: input.now });
        this.log(input.now, 'create', 'ACCEPT_TASK', input.authKey, inserted.task_id, input.correlationId, null);
        return { decision: 'ACCEPT_TASK', record: rowToRecord(inserted) };
      }
      // Only the (auth_key, idempotency_key) conflict is absorbed, so a key is present here.
      const priorRow = this.sql.selectByKey.get(input.authKey, key) as TaskRow | undefined;
      const prior = priorRow === undefined ? null : rowToRecord(priorRow);
      const decision = decideAdmission({ ...input, auth: input.authKey, prior });
      if (prior === null || decision === 'ACCEPT_TASK') {
        throw new TasklatchError('INTERNAL', `insert of task ${input.taskId} conflicted with no live holder of its key`);
      }
      this.log(input.now, 'create', decision, input.authKey, prior.taskId, input.correlationId, prior);
      return decision === 'REPLAY_TASK' ? { decision, record: prior } : { decision, record: null };
    });
  }

  /** The outcome when the caller is at its active-task limit, or null to go on admitting. */
  private admitOverLimit(input: AdmitInput, maxActive: number): AdmitOutcome | null {
    const { n } = this.sql.countActive.get({ auth_key: input.authKey, now: input.now }) as { n: number };
    if (n < maxActive) return null;
    const priorRow = input.idempotencyKey === null ? undefined : (this.sql.selectByKey.get(input.authKey, input.idempotencyKey) as TaskRow | undefined);
    const prior = priorRow === undefined ? null : rowToRecord(priorRow);
    const decision = decideAdmission({ ...input, auth: input.authKey, prior });
    if (decision !== 'ACCEPT_TASK' && prior !== null) {
      this.log(input.now, 'create', decision, input.authKey, prior.taskId, input.correlationId, prior);
      return decision === 'REPLAY_TASK' ? { decision, record: prior } : { decision, record: null };
    }
    this.log(input.now, 'create', 'BLOCK_TASK_LIMIT', input.authKey, null, input.correlationId, null);
    return { decision: 'BLOCK_TASK_LIMIT', record: null };
  }

  async transition(input: TransitionInput): Promise<TransitionOutcome> {
    return this.write(() => {
      const { write } = input;
      let applied: TaskRow | undefined;
      // Only a well-formed write reaches SQL: SQLite would coerce a text '3' to match version 3,
      // where the rules compare strictly. Anything else goes straight to classification.
      if (isTaskStatus(write.status) && Number.isSafeInteger(write.expectedVersion)) {
        const terminal = isTerminal(write.status);
        const result = write.result ?? null;
        applied = this.sql.applyTransition.get({
          task_id: input.taskId,
          auth_key: input.authKey,
          expected_version: write.expectedVersion,
          now: input.now,
          status: write.status,
          set_message: write.statusMessage === undefined ? 0 : 1,
          status_message: write.statusMessage ?? null,
          terminal: terminal ? 1 : 0,
          result: terminal ? toJson(result) : null,
          result_digest: terminal && result !== null ? resultDigest(result) : null,
        }) as TaskRow | undefined;
      }
      if (applied !== undefined) {
        const record = rowToRecord(applied);
        // In the same transaction: a committed terminal status never leaves its task dispatchable.
        if (isTerminal(record.status)) this.sql.closeDispatch.run({ task_id: input.taskId, now: input.now });
        this.log(input.now, 'transition', 'APPLY_TRANSITION', input.authKey, input.taskId, input.correlationId, record);
        return { decision: 'APPLY_TRANSITION', record };
      }
      const stored = this.readById(input.taskId);
      const decision = decideTransition({ task: stored, auth: input.authKey, write, now: input.now });
      if (decision === 'APPLY_TRANSITION') {
        throw new TasklatchError('INTERNAL', `conditional write on task ${input.taskId} changed no row, yet the rules apply it`);
      }
      const visible = stored !== null && stored.authKey === input.authKey ? stored : null;
      this.log(input.now, 'transition', decision, input.authKey, input.taskId, input.correlationId, visible);
      return { decision, record: visible };
    });
  }

  async get({ authKey, taskId, now }: TaskRef & { now: Millis }): Promise<LookupOutcome> {
    // A read transaction: both reads see one snapshot, so a row another process inserts between
    // them cannot make the classification disagree with the query.
    return this.db
      .transaction((): LookupOutcome => {
        const row = this.sql.selectVisible.get({ task_id: taskId, auth_key: authKey, now }) as TaskRow | undefined;
        if (row !== undefined) return { decision: 'FOUND', record: rowToRecord(row) };
        const miss = classifyMiss(this.readById(taskId), authKey, now);
        if (miss === null) throw new TasklatchError('INTERNAL', `task ${taskId} is visible to the rules but not to the query`);
        return { decision: miss, record: null };
      })
      .deferred();
  }

  async cancel({ authKey, taskId, now, correlationId }: TaskRef & { now: Millis; correlationId: string }): Promise<CancelOutcome> {
    return this.write(() => {
      const row = this.sql.applyCancel.get({ task_id: taskId, auth_key: authKey, now }) as TaskRow | undefined;
      if (row !== undefined) {
        const record = rowToRecord(row);
        this.sql.closeDispatch.run({ task_id: taskId, now });
        this.log(now, 'read', 'CANCEL_TASK', authKey, taskId, correlationId, record);
        return { decision: 'CANCEL_TASK', record };
      }
      const stored = this.readById(taskId);
      const miss = classifyMiss(stored, authKey, now);
      if (miss !== null || stored === null) {
        this.log(now, 'read', miss ?? 'NOT_FOUND', authKey, taskId, correlationId, null);
        return { decision: miss ?? 'NOT_FOUND', record: null };
      }
      if (!isTerminal(stored.status)) {
        throw new TasklatchError('INTERNAL', `cancel of live task ${taskId} changed no row`);
      }
      this.log(now, 'read', 'ALREADY_TERMINAL', authKey, taskId, correlationId, stored);
      return { decision: 'ALREADY_TERMINAL', record: stored };
    });
  }

  async list(page: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): Promise<ListPage> {
    const { authKey, now, after } = page;
    // One row past the page says whether another page exists, without a COUNT.
    const base = { auth_key: authKey, now, limit: page.limit + 1 };
    const rows = (
      after === null
        ? this.sql.listFirst.all(base)
        : this.sql.listAfter.all({ ...base, after_created_at_ms: after.createdAt, after_task_id: after.taskId })
    ) as TaskRow[];
    return { records: rows.slice(0, page.limit).map(rowToRecord), hasMore: rows.length > page.limit };
  }

  async claim(input: ClaimInput): Promise<TaskRecord[]> {
    return this.write(() => claimIn(this.sql, input));
  }

  async heartbeat({ fence, now, leaseMs }: { fence: Fence; now: Millis; leaseMs: number }): Promise<boolean> {
    return this.write(() => heartbeatIn(this.sql, fence, now, leaseMs));
  }

  async release({ fence, now }: { fence: Fence; now: Millis }): Promise<boolean> {
    return this.write(() => releaseIn(this.sql, fence, now));
  }

  /** `now` is part of the interface; an open entry counts whether or not it is due yet. */
  async pendingDispatch(_input: { now: Millis }): Promise<number> {
    return (this.sql.countPending.get() as { n: number }).n;
  }

  async recordDecision(entry: AuditEntry): Promise<void> {
    this.sql.insertAudit.run(auditToRow(entry));
  }

  async auditTrail({ taskId }: { taskId: string }): Promise<AuditEntry[]> {
    return (this.sql.selectAudit.all(taskId) as AuditRow[]).map(rowToAudit);
  }

  async sweepExpired({ now, limit }: { now: Millis; limit: number }): Promise<number> {
    // The outbox entries go by ON DELETE CASCADE (open turns foreign_keys on for the connection).
    return this.write(() => this.sql.sweep.run(now, limit).changes);
  }

  async seed(records: readonly TaskRecord[]): Promise<void> {
    this.write(() => {
      for (const record of records) {
        const row = recordToRow(record);
        if (row.idempotency_key !== null) this.sql.releaseKeyForSeed.run(row);
        this.sql.upsertTask.run(row);
      }
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

  /** Other processes on the file do not notify this one (yet): waiters fall back to polling. */
  async listen(): Promise<() => Promise<void>> {
    return async () => undefined;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private readById(taskId: string): TaskRecord | null {
    const row = this.sql.selectById.get(taskId) as TaskRow | undefined;
    return row === undefined ? null : rowToRecord(row);
  }

  /** Runs `fn` in a BEGIN IMMEDIATE transaction; a lock still held after busy_timeout is STORE_UNAVAILABLE. */
  private write<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (error) {
      if (isBusy(error)) {
        throw new TasklatchError('STORE_UNAVAILABLE', 'SQLite store is locked by another process (busy timeout)', { cause: error });
      }
      throw error;
    }
  }

  private log(
    at: Millis,
    surface: AuditEntry['surface'],
    decision: AuditEntry['decision'],
    authKey: string,
    taskId: string | null,
    correlationId: string,
    record: TaskRecord | null,
  ): void {
    this.sql.insertAudit.run(
      auditToRow({ at, surface, decision, authKey, taskId, correlationId, status: record?.status ?? null, version: record?.version ?? null }),
    );
  }
}


function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
