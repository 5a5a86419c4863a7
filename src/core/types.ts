/**
 * Glossary (the words every other module uses):
 *
 * - **task**: one long-running tool call, known to the requestor by its `taskId`.
 * - **record**: the stored admission record of a task: who created it, what was asked, where it
 *   stands. The record outlives every process that works on it.
 * - **version**: a counter on the record that grows by one on every applied write. A writer names
 *   the version it read (`expectedVersion`); a write against any other version is refused.
 * - **lease**: a worker's time-limited claim on a task (owner + expiry). An expired lease may be
 *   taken over by another worker.
 * - **attempt**: how many times a worker has claimed the task.
 * - **auth key**: the creator's authorization context (`tenant/subject`, `authKeyOf` in
 *   `principal.ts`). Every query carries it; `visibility.ts` says who sees a task.
 * - **outbox**: the dispatch entry written in the same transaction as the record, so work is
 *   never dispatched for a task that does not exist, nor lost for one that does.
 * - **terminal**: `completed`, `failed`, `cancelled`. A terminal status never changes.
 * - **app**: the application that admitted a task. Tool names are unique within an app only, so
 *   a worker claims the tasks of its own app (and tools); two apps may share one store.
 *
 * Time in the core is epoch milliseconds (`number`); the clock is always passed in.
 */

export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && (TASK_STATUSES as readonly string[]).includes(value);
}

export function isTerminal(status: TaskStatus): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** Epoch milliseconds. */
export type Millis = number;

/** The stored admission record, as the rules see it. */
export interface TaskRecord {
  taskId: string;
  authKey: string;
  /** The application that admitted the task (`checkAppName`); only its workers claim it. */
  app: string;
  toolName: string | null;
  /**
   * `toolDigest` of the tool's definition when the task was admitted (null: not recorded, as for
   * tasks stored before apps were): a worker whose definition differs says so before running it.
   */
  toolDigest: string | null;
  /**
   * The version of its tool when the task was admitted (`ToolRegistry.version`; null: not
   * recorded, as for tasks stored before versions were). Workers of that version run it while
   * one lives; see `src/core/version-rules.ts`. A claim never changes it.
   */
  toolVersion: string | null;
  status: TaskStatus;
  statusMessage: string | null;
  version: number;
  createdAt: Millis;
  lastUpdatedAt: Millis;
  /** Actual ttl in ms; null = never expires. */
  ttl: number | null;
  /** createdAt + ttl, or null. */
  expiresAt: Millis | null;
  pollInterval: number | null;
  requestDigest: string | null;
  idempotencyKey: string | null;
  /** The wrapped request as received (`{ method, params }`), kept for workers and replays. */
  request: unknown;
  /** The requestor asked for cancellation. */
  cancelRequested: boolean;
  /** Stored outcome of a terminal task (a CallToolResult or `{ error }`), else null. */
  result: unknown;
  resultDigest: string | null;
  correlationId: string | null;
  attempt: number;
  leaseOwner: string | null;
  leaseExpiresAt: Millis | null;
  /**
   * The task that started this one as a child (`ctx.step.runTool`); absent: a task of its own.
   * Children are left out of their principal's `tasks/list`.
   */
  parentTaskId?: string;
}

/**
 * A task as a listing shows it: the Task fields of the wire (`wireTask`) and the stored version
 * (which orders the states a listing can show), without the request, the result, the digests or
 * the lease. A `tasks/list` page reads only these columns: fifty full records carried their
 * requests and results (about a kilobyte a task on the bench's population) only for the encoder
 * to drop them.
 */
export type ListedTask = Pick<TaskRecord, 'taskId' | 'status' | 'statusMessage' | 'version' | 'createdAt' | 'lastUpdatedAt' | 'ttl' | 'pollInterval'>;

/** Capabilities in the spec's server shape: each leaf's presence is the signal. */
export interface TaskCapabilities {
  list?: object;
  cancel?: object;
  requests?: { tools?: { call?: object } };
}

export type TaskSupport = 'required' | 'optional' | 'forbidden';

export interface ToolDescriptor {
  name: string;
  execution?: { taskSupport?: TaskSupport };
}

/** A JSON-RPC request as the rules see it. */
export interface WireRequest {
  method: string;
  params: Record<string, unknown>;
}

export const READ_METHODS = ['tasks/get', 'tasks/result', 'tasks/cancel'] as const;
export type ReadMethod = (typeof READ_METHODS)[number];

/** A status write by a worker or the runtime. `status` is unchecked input on purpose. */
export interface StatusWrite {
  status: string;
  expectedVersion: number;
  result?: unknown;
  statusMessage?: string | null;
}

/**
 * The fence a worker holds on a claimed task: its lease owner id and the version it wrote. A
 * heartbeat or release counts only while the stored record still matches it (`holdsFence`).
 */
export interface Fence {
  taskId: string;
  authKey: string;
  owner: string;
  version: number;
}
