import type { CreateTaskOptions, TaskStore as SdkTaskStoreInterface } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { McpError, type Request, type RequestId, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import { isStoreFault, isTasklatchError } from '../../core/errors.js';
import { JSON_RPC_CODES } from '../../core/json-rpc-codes.js';
import type { TaskCapabilities, WireRequest } from '../../core/types.js';
import { peekResult } from '../../runtime/requests/await-result.js';
import { cancelTask } from '../../runtime/requests/cancel-task.js';
import { getTask } from '../../runtime/requests/get-task.js';
import { openGuard, type Guard, type TaskLimits } from '../../runtime/requests/host.js';
import { listTasks } from '../../runtime/requests/list-tasks.js';
import { admitOwnTask, writeOwnTask, type OwnTaskWrite } from '../../runtime/requests/own-task.js';
import { wireResult, wireTask } from '../encode.js';
import { storeUnavailable } from '../../tools/protocol-error.js';
import type { TaskStore } from '../../store/types.js';
import { RequestAuth, type ResolvePrincipal } from './request-auth.js';

export interface SdkTaskStoreOptions {
  /** A tasklatch store (`SqliteStore`, `PostgresStore`, `MemoryStore`); closed by its owner, not here. */
  store: TaskStore;
  /** The caller of a request from its auth context (default: `principalFromAuthInfo`). */
  principal?: ResolvePrincipal;
  limits?: Partial<TaskLimits>;
  clock?: () => number;
}

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
  /** The guard in front of the store; the requests below go through it (`runtime/requests`). */
  readonly guard: Guard;
  readonly auth: RequestAuth;
  /** What the requests need of a host: the guard alone (the handlers run in the SDK server, not here). */
  private readonly host: { guard: Guard; stopRun(taskId: string): void };

  constructor(options: SdkTaskStoreOptions) {
    this.guard = openGuard({
      store: options.store,
      capabilities: CAPABILITIES,
      ...(options.limits === undefined ? {} : { limits: options.limits }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    });
    this.auth = new RequestAuth(options.principal);
    this.host = { guard: this.guard, stopRun: () => undefined };
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
    const outcome = await this.translate(() => admitOwnTask(this.host, { auth: this.auth.authKey(), name, request: wire }));
    if (outcome.kind === 'task') return wireTask(outcome.record);
    if (outcome.decision === 'BLOCK_IDEMPOTENCY_COLLISION')
      throw new McpError(JSON_RPC_CODES.invalidParams, 'Idempotency key is already used by a different request');
    if (outcome.decision === 'BLOCK_TASK_LIMIT')
      throw new McpError(JSON_RPC_CODES.tooManyTasks, `Too many active tasks: at most ${this.guard.context.limits.maxActiveTasks ?? 0} per caller`);
    throw new McpError(JSON_RPC_CODES.internalError, `task admission answered ${outcome.decision}`);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const out = await this.translate(() => getTask(this.host, { auth: this.auth.authKey(), taskId }));
    return out.kind === 'not-found' ? null : wireTask(out.record);
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    await this.translate(() => this.write(taskId, { status, result }));
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const out = await this.translate(() => peekResult(this.host, { auth: this.auth.authKey(), taskId }));
    if (out.kind === 'not-found') throw new McpError(JSON_RPC_CODES.invalidParams, `Task not found: ${taskId}`);
    if (out.kind === 'running') throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId} is ${out.record.status} and has no result yet`);
    const { _meta: _related, ...result } = wireResult(out.record);
    return result;
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    if (status === 'cancelled') {
      const out = await this.translate(() => cancelTask(this.host, { auth: this.auth.authKey(), taskId }));
      if (out.kind === 'not-found' || out.kind === 'not-supported') throw new McpError(JSON_RPC_CODES.invalidParams, `Task not found: ${taskId}`);
      if (out.kind === 'terminal') throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId} is already ${out.record.status}`);
      return;
    }
    await this.translate(() => this.write(taskId, { status, ...(statusMessage === undefined ? {} : { statusMessage }) }));
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    if (this.auth.principal() === null) throw new Error('tasks/list needs an authenticated caller: anonymous callers would see each other’s tasks');
    const out = await this.translate(() => listTasks(this.host, { auth: this.auth.authKey(), cursor }));
    // An McpError, as `translate` made of the cursor error before: the SDK keeps its message.
    if (out.kind === 'invalid-cursor') throw new McpError(JSON_RPC_CODES.invalidParams, 'invalid cursor');
    if (out.kind !== 'page') throw new Error('tasks/list is not offered');
    return { tasks: out.records.map(wireTask), ...(out.nextCursor === null ? {} : { nextCursor: out.nextCursor }) };
  }

  /** A status write of the SDK handler, as the guard answers it (see `writeOwnTask`). */
  private async write(taskId: string, write: OwnTaskWrite): Promise<void> {
    const out = await writeOwnTask(this.host, { auth: this.auth.authKey(), taskId, write });
    switch (out.kind) {
      case 'written':
        return;
      case 'not-found':
        throw new McpError(JSON_RPC_CODES.invalidParams, `Task not found: ${taskId}`);
      case 'terminal':
        throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId} is already ${out.status ?? 'terminal'}; a terminal status is final`);
      case 'refused':
        throw new McpError(JSON_RPC_CODES.invalidParams, `Task ${taskId}: write refused (${out.decision})`);
      case 'version-moving':
        throw new McpError(JSON_RPC_CODES.internalError, `Task ${taskId}: the version kept moving; write not applied`);
    }
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
