import { coerceError } from '../../core/errors.js';
import { outstanding, type InputRequest } from '../../core/input-rules.js';
import type { TaskRecord } from '../../core/types.js';
import { awaitTaskResult } from '../../service/result-wait.js';
import { rideThrough } from '../../service/ride-through.js';
import { answerTask } from './answer-task.js';
import type { RequestHost } from './host.js';
import { couldBeTask } from './task-id.js';
import { requestSpan, traced } from '../../trace/request-span.js';

/** Sends one question to the requestor and resolves with its answer (a 2025-11-25 server→client request). */
export type AskRequestor = (taskId: string, key: string, request: InputRequest) => Promise<unknown>;

export interface AwaitResultRequest {
  auth: string;
  taskId: string;
  /** Fires when the requestor goes away: the wait ends, `abandoned`. */
  signal?: AbortSignal;
  /**
   * How this requestor is asked a waiting task's questions while the result is held (2025-11-25:
   * on the `tasks/result` stream). Each outstanding question is asked once per wait; its answer
   * goes through `answerTask`; a question whose ask fails or whose answer is refused is asked
   * again on the next wake.
   */
  ask?: AskRequestor;
  /** Bounds each sleep instead of the relay's default. */
  fallbackPollMs?: number;
}

/** What a held `tasks/result` came to: the terminal task, the requestor gone first, or not found. */
export type AwaitResultOutcome = { kind: 'result'; record: TaskRecord } | { kind: 'abandoned' } | { kind: 'not-found' };

/**
 * `tasks/result`, held until the task is terminal (see `awaitResult` in `service/result-wait.ts`):
 * each read rides through a store outage shorter than `limits.storeOutageMs`; past it the store's
 * error is thrown, which each wire answers as the retryable `Store unavailable`.
 */
export function awaitResult(host: Pick<RequestHost, 'guard' | 'logger'>, request: AwaitResultRequest): Promise<AwaitResultOutcome> {
  return traced(requestSpan('tasks/result', undefined, request.taskId), undefined, holdResult, host, request);
}

async function holdResult(host: Pick<RequestHost, 'guard' | 'logger'>, request: AwaitResultRequest): Promise<AwaitResultOutcome> {
  const { auth, taskId, signal } = request;
  if (!couldBeTask(taskId)) return { kind: 'not-found' };
  const onWaitInput = request.ask === undefined ? undefined : questionsFor(host, auth, request.ask);
  const out = await awaitTaskResult(host.guard, Object.assign({ auth, taskId }, signal === undefined ? {} : { signal }, optional(request, onWaitInput)));
  if (out.record === null) return { kind: 'not-found' };
  if (out.decision !== 'RETURN_RESULT') return { kind: 'abandoned' };
  return { kind: 'result', record: out.record };
}

/** What one look at a task's result came to, without waiting: its result, still running, or not found. */
export type PeekResultOutcome = { kind: 'result'; record: TaskRecord } | { kind: 'running'; record: TaskRecord } | { kind: 'not-found' };

/**
 * One look of `tasks/result` without holding it (the task tools' `task_result`, the SDK task
 * store's `getTaskResult`): the read decision, audited, through a short store outage.
 */
export async function peekResult(host: Pick<RequestHost, 'guard'>, request: { auth: string; taskId: string }): Promise<PeekResultOutcome> {
  if (!couldBeTask(request.taskId)) return { kind: 'not-found' };
  const { requestor, context } = host.guard;
  const out = await rideThrough(() => requestor.read({ auth: request.auth, method: 'tasks/result', taskId: request.taskId }), context.limits.storeOutageMs);
  if (out.record === null) return { kind: 'not-found' };
  return out.decision === 'RETURN_RESULT' ? { kind: 'result', record: out.record } : { kind: 'running', record: out.record };
}

function optional(request: AwaitResultRequest, onWaitInput: ((record: TaskRecord) => Promise<void>) | undefined) {
  return Object.assign(
    {},
    request.fallbackPollMs === undefined ? {} : { fallbackPollMs: request.fallbackPollMs },
    onWaitInput === undefined ? {} : { onWaitInput },
  );
}

/**
 * The wake of a wait that finds the task waiting for input: each outstanding question not yet
 * asked on this wait is asked, and its answer stored through `answerTask` (under the waiting
 * caller's auth key, so only the task's own principal answers it). A lost stream, a refusal or
 * an answer refused leaves the question outstanding, to be asked again on the next wake.
 */
function questionsFor(host: Pick<RequestHost, 'guard' | 'logger'>, auth: string, ask: AskRequestor): (record: TaskRecord) => Promise<void> {
  const asked = new Set<string>();
  return async (record) => {
    const { taskId } = record;
    for (const question of outstanding(await host.guard.answers.lookupInputs({ auth, taskId }))) {
      if (asked.has(question.key)) continue;
      asked.add(question.key);
      ask(taskId, question.key, question.request)
        .then(async (response) => {
          const out = await answerTask(host, { auth, taskId, responses: { [question.key]: response }, via: 'tasks/result' });
          if (out.kind === 'not-an-answer') throw new Error(`the answer to ${out.key} is not an answer to ${out.method}`);
          if (out.kind === 'refused') throw new Error(out.problem);
        })
        .catch((error: unknown) => {
          asked.delete(question.key);
          host.logger.info({ taskId, key: question.key, err: coerceError(error) }, 'input request not answered on this stream');
        });
    }
  };
}
