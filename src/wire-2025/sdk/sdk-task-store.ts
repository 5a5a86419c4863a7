import type { CreateTaskOptions, TaskStore as SdkTaskStoreInterface } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { McpError, type Request, type RequestId, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import { isStoreFault, isTasklatchError } from '../../core/errors.js';
import { JSON_RPC_CODES } from '../../core/json-rpc-codes.js';
import { isTerminal, type TaskCapabilities, type TaskRecord, type WireRequest } from '../../core/types.js';
import { wireResult, wireTask } from '../wire.js';
import { storeUnavailable } from '../../tools/protocol-error.js';
import { isPlausibleTaskId } from '../../service/input-bounds.js';
import type { TaskLimits } from '../../service/limits.js';
import { openGuard, type Guard } from '../../service/guard.js';
import { listTasks, readTask } from '../../runtime/requestor-reads.js';
import type { TaskStore } from '../../store/types.js';
import { RequestAuth, type ResolvePrincipal } from './request-auth.js';
import { createTask } from '../../runtime/requests/create-task.js';

export interface SdkTaskStoreOptions {
  /** A tasklatch store (`SqliteStore`, `PostgresStore`, `MemoryStore`); closed by its owner, not here. */
  store: TaskStore;
  /** The caller of a request from its auth context (default: `principalFromAuthInfo`). */
  principal?: ResolvePrincipal;
  limits?: Partial<TaskLimits>;
  clock?: () => number;
}

/** How many times a status write is tried again after another write moved the version in between. */
const STALE_RETRIES = 5;

const CAPABILITIES: TaskCapabilities = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/**
 * The SDK's experimental `TaskStore` on a tasklatch store, for servers that already use
 * `experimental.tasks.registerToolTask`: records are durable and shared by every process on the
 * store, bound to the caller of the request (each transport is bound with `bind()`; the auth
 * key is in every query), and every write goes through tasklatch's guard: a terminal status is
 * final, a write names the version it read, the ttl runs from creation.
 *
 * It cannot change where the work runs: the tool's handler stays in the SDK server's process
 * and nothing takes a task over when that process dies (the task stays `working` until its ttl).
 * For work that survives a crash, attach tasklatch to the server instead (`attachTasklatch`).
 */
export class SdkTaskStore implements SdkTaskStoreInterface {
  /** The guard in front of the store, by caller (see `Guard`). */
  readonly guard: Guard;
  readonly auth: RequestAuth;

  constructor(options: SdkTaskStoreOptions) {
    this.guard = openGuard({
      store: options.store,
      capabilities: CAPABILITIES,
      ...(options.limits === undefined ? {} : { limits: options.limits }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    });
    this.auth = new RequestAuth(options.principal);
  }

  /** Wraps a transport before `server.connect(transport)`, so that its requests carry their caller. */
  bind<T extends Parameters<RequestAuth['bind']>[0]>(transport: T): T {
    return this.auth.bind(transport);
  }

  async createTask(taskParams: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<Task> {
    const params = (request.params ?? {}) as Record<string, unknown>;
    const ttl = taskParams.ttl ?? undefined;
    const name = typeof params.name === 'string' ? params.name : request.method;
    // Augmented in the guard's terms whether or not the client sent `task` (the SDK polls an
    // optional tool's task itself); the ttl is the one the handler asked for.
    const wire: WireRequest = {
      method: request.method,
      params: Object.assign({}, params, { task: Object.assign({}, params.task as object, ttl === undefined ? {} : { ttl }) }),
    };
    const outcome = await this.translate(() =>
      createTask(this.guard, { auth: this.auth.authKey(), tool: { name, execution: { taskSupport: 'optional' } }, request: wire }),
    );
    if (outcome.decision === 'ACCEPT_TASK' || outcome.decision === 'REPLAY_TASK') return wireTask(outcome.record);
    if (outcome.decision === 'BLOCK_IDEMPOTENCY_COLLISION')
      throw new McpError(JSON_RPC_CODES.invalidParams, 'Idempotency key is already used by a different request');
    if (outcome.decision === 'BLOCK_TASK_LIMIT')
      throw new McpError(JSON_RPC_CODES.tooManyTasks, `Too many active tasks: at most ${this.guard.context.limits.maxActiveTasks ?? 0} per caller`);
    throw new McpError(JSON_RPC_CODES.internalError, `task admission answered ${outcome.decision}`);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const record = await this.translate(() => this.read(taskId, 'tasks/get'));
    return record === null ? null : wireTask(record);
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    await this.translate(() => this.write(taskId, { status, result }));
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const record = await this.translate(() => this.read(taskId, 'tasks/result'));
    if (record === null) throw new McpError(JSON_RPC_CODES.invalidParams, `Task not found: ${taskId}`);
    if (!isTerminal(record.status)) throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId} is ${record.status} and has no result yet`);
    const { _meta: _related, ...result } = wireResult(record);
    return result;
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    if (status === 'cancelled') {
      const out = await this.translate(() => this.guard.requestor.cancel({ auth: this.auth.authKey(), taskId }));
      if (out.record === null) throw new McpError(JSON_RPC_CODES.invalidParams, `Task not found: ${taskId}`);
      if (out.decision === 'ALREADY_TERMINAL') throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId} is already ${out.record.status}`);
      return;
    }
    await this.translate(() => this.write(taskId, { status, ...(statusMessage === undefined ? {} : { statusMessage }) }));
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    if (this.auth.principal() === null) throw new Error('tasks/list needs an authenticated caller: anonymous callers would see each other’s tasks');
    const out = await this.translate(() => listTasks(this.guard, { auth: this.auth.authKey(), cursor }));
    if (out.decision !== 'LIST_FILTERED') throw new Error('tasks/list is not offered');
    return { tasks: out.records.map(wireTask), ...(out.nextCursor === null ? {} : { nextCursor: out.nextCursor }) };
  }

  /** The caller's record through the guard; null for unknown, foreign and expired ids alike. */
  private async read(taskId: string, method: 'tasks/get' | 'tasks/result'): Promise<TaskRecord | null> {
    if (!isPlausibleTaskId(taskId)) return null;
    return (await readTask(this.guard, { auth: this.auth.authKey(), method, taskId })).record;
  }

  /**
   * A status write naming the version it read. Another write in between (a status message) is
   * read and the write tried again; a terminal task refuses every write, as does an expired one.
   */
  private async write(taskId: string, write: { status: string; result?: unknown; statusMessage?: string }): Promise<void> {
    const auth = this.auth.authKey();
    for (let attempt = 0; attempt <= STALE_RETRIES; attempt++) {
      const found = isPlausibleTaskId(taskId) ? (await this.guard.worker.lookup({ auth, taskId })).record : null;
      if (found === null) throw new McpError(JSON_RPC_CODES.invalidParams, `Task not found: ${taskId}`);
      const out = await this.guard.worker.transition({ auth, taskId, write: Object.assign({}, write, { expectedVersion: found.version }) });
      if (out.decision === 'APPLY_TRANSITION' || out.decision === 'IDEMPOTENT_TERMINAL') return;
      if (out.decision === 'BLOCK_STALE_VERSION') continue;
      if (out.decision === 'BLOCK_TERMINAL_REWRITE')
        throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId} is already ${out.record?.status ?? 'terminal'}; a terminal status is final`);
      throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId}: write refused (${out.decision})`);
    }
    throw new McpError(JSON_RPC_CODES.internalError, `Task ${taskId}: the version kept moving; write not applied`);
  }

  /**
   * Our errors as the SDK answers them: refused input is invalid params, and a store fault the
   * retryable `Store unavailable` (the SDK would answer any other error as an internal error
   * carrying its text, here a database's address).
   */
  private async translate<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (isTasklatchError(error, 'INVALID_INPUT') || isTasklatchError(error, 'INVALID_CURSOR'))
        throw new McpError(JSON_RPC_CODES.invalidParams, error.message);
      if (isStoreFault(error)) {
        // An McpError: the SDK's own tasks/cancel handler passes only those through as they are
        // (its tasks/list handler answers any error as invalid params, keeping only the message).
        const unavailable = storeUnavailable();
        throw new McpError(unavailable.code, unavailable.message, unavailable.data);
      }
      throw error;
    }
  }
}
