import type { AnswerTaskOutcome } from '../runtime/requests/answer-task.js';
import type { CancelTaskResult } from '../runtime/requests/cancel-task.js';
import type { GetTaskOutcome } from '../runtime/requests/get-task.js';
import { withoutExecution, type ListToolsOutcome } from '../runtime/requests/list-tools.js';
import { detailedTask } from '../tools/task-views.js';
import type { ProtocolError } from '../tools/protocol-error.js';
import { invalidParams, methodNotFound } from './protocol.js';

/**
 * The request layer's outcomes as 2026-07-28 messages. Unknown, foreign and expired task ids
 * share one message so an id reveals nothing.
 */
export const TASK_NOT_FOUND = 'Task not found';

export function taskNotFound(): ProtocolError {
  return invalidParams(TASK_NOT_FOUND);
}

/** `tasks/get`: the DetailedTask (`resultType: complete`), with every outstanding question of an `input_required` task inlined. */
export function encodeTask(outcome: GetTaskOutcome): Record<string, unknown> {
  if (outcome.kind === 'not-found') throw taskNotFound();
  const view = detailedTask(outcome.record);
  if (outcome.questions !== null) view.inputRequests = outcome.questions;
  return view;
}

/** `tasks/update`: the empty ack; a refused answer is invalid params naming its key. */
export function encodeUpdate(outcome: AnswerTaskOutcome): Record<string, unknown> {
  switch (outcome.kind) {
    case 'answered':
      return { resultType: 'complete' };
    case 'not-found':
      throw taskNotFound();
    case 'not-an-answer':
      throw invalidParams(`inputResponses.${outcome.key} is not an answer to ${outcome.method}`);
    case 'refused':
      throw invalidParams(`Invalid inputResponses: ${outcome.problem}`);
  }
}

/**
 * `tasks/cancel`: the empty ack, whether the cancellation was latched or the task had already
 * ended (the extension's cooperative cancel; 2025-11-25 refused the latter).
 */
export function encodeCancel(outcome: CancelTaskResult): Record<string, unknown> {
  switch (outcome.kind) {
    case 'cancelled':
    case 'terminal':
      return { resultType: 'complete' };
    case 'not-found':
      throw taskNotFound();
    case 'not-supported':
      throw methodNotFound('tasks/cancel');
  }
}

/** `tools/list`: 2026-07-28 tools carry no `execution.taskSupport`: whether a call becomes a task is the server's. */
export function encodeTools(outcome: ListToolsOutcome, cache: Record<string, unknown>): Record<string, unknown> {
  return Object.assign({ resultType: 'complete', tools: outcome.tools.map(withoutExecution) }, cache);
}
