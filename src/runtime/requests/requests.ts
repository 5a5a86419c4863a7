import type { Millis } from '../../core/types.js';
import { acceptWatch, watchTasks, type TaskWatch, type WatchTasksRequest } from './watch-tasks.js';
import { answerTask, type AnswerTaskOutcome, type AnswerTaskRequest } from './answer-task.js';
import { awaitResult, peekResult, type AwaitResultOutcome, type AwaitResultRequest, type PeekResultOutcome } from './await-result.js';
import { cancelTask, type CancelTaskRequest, type CancelTaskResult } from './cancel-task.js';
import { getTask, type GetTaskOutcome, type GetTaskRequest } from './get-task.js';
import type { RequestHost, TaskLimits } from './host.js';
import { listTasks, type ListTasksOutcome, type ListTasksRequest } from './list-tasks.js';
import { listTools, type ListToolsOutcome, type ListToolsRequest } from './list-tools.js';

export type { AnswerCheck, AnswerTaskOutcome, AnswerTaskRequest } from './answer-task.js';
export { checkAnswer } from './answer-task.js';
export type { AskRequestor, AwaitResultOutcome, AwaitResultRequest, PeekResultOutcome } from './await-result.js';
export type { CancelTaskRequest, CancelTaskResult } from './cancel-task.js';
export type { GetTaskOutcome, GetTaskRequest } from './get-task.js';
export type { RequestHost, TaskLimits } from './host.js';
export type { ListTasksOutcome, ListTasksRequest } from './list-tasks.js';
export type { ListedTool, ListToolsOutcome, ListToolsRequest } from './list-tools.js';
export { withoutExecution } from './list-tools.js';
export type { TaskWatch, WatchTasksRequest } from './watch-tasks.js';
export { openGuard, type Guard, type GuardOptions } from './host.js';
export { admitOwnTask, writeOwnTask, type AdmitOwnTaskOutcome, type OwnTaskWrite, type WriteOwnTaskOutcome } from './own-task.js';
export { cancelTask, getTask, listTasks, peekResult };

/**
 * The requests of both wires, each decided once (one file per method: `get-task.ts`,
 * `await-result.ts`, `cancel-task.ts`, `answer-task.ts`, `list-tasks.ts`, `list-tools.ts`,
 * `watch-tasks.ts`; `tools/call` is `runtime/call-tool.ts`). Each takes plain data and answers
 * an outcome discriminated by `kind`; a wire decodes its params into the request and encodes
 * the outcome as its era's messages, deciding nothing itself. Bound to one runtime as
 * `runtime.requests`, with the few settings the wires' own framing reads.
 */
export interface Requests {
  /** The limits the wires' own framing reads (answer and listen bounds, subscription caps, round-state age). */
  readonly limits: TaskLimits;
  /** The guard's clock. */
  now(): Millis;
  /** The secret every process on the store shares (signed round state). */
  sharedSecret(): Promise<Uint8Array>;
  getTask(request: GetTaskRequest): Promise<GetTaskOutcome>;
  awaitResult(request: AwaitResultRequest): Promise<AwaitResultOutcome>;
  peekResult(request: { auth: string; taskId: string }): Promise<PeekResultOutcome>;
  cancelTask(request: CancelTaskRequest): Promise<CancelTaskResult>;
  answerTask(request: AnswerTaskRequest): Promise<AnswerTaskOutcome>;
  listTasks(request: ListTasksRequest): Promise<ListTasksOutcome>;
  listTools(request: ListToolsRequest): ListToolsOutcome;
  acceptWatch(request: { auth: string; taskIds: readonly string[]; via: string; signal?: AbortSignal }): Promise<{ accepted: string[] }>;
  watchTasks(request: WatchTasksRequest): TaskWatch;
}

/** The requests bound to `host` (see `Requests`). */
export function openRequests(host: RequestHost): Requests {
  const { context } = host.guard;
  return {
    limits: context.limits,
    now: () => context.clock(),
    sharedSecret: () => context.store.sharedSecret(),
    getTask: (request) => getTask(host, request),
    awaitResult: (request) => awaitResult(host, request),
    peekResult: (request) => peekResult(host, request),
    cancelTask: (request) => cancelTask(host, request),
    answerTask: (request) => answerTask(host, request),
    listTasks: (request) => listTasks(host, request),
    listTools: (request) => listTools(host, request),
    acceptWatch: (request) => acceptWatch(host, request),
    watchTasks: (request) => watchTasks(host, request),
  };
}
