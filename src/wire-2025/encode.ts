import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import type { TaskRecord } from '../core/types.js';
import type { AwaitResultOutcome } from '../runtime/requests/await-result.js';
import type { CancelTaskResult } from '../runtime/requests/cancel-task.js';
import type { GetTaskOutcome } from '../runtime/requests/get-task.js';
import type { ListTasksOutcome } from '../runtime/requests/list-tasks.js';
import { isStoredError, ProtocolError } from '../tools/protocol-error.js';
import { wireTask } from '../tools/task-views.js';
import type { ToolResult } from '../tools/tool.js';

/**
 * The decision → JSON-RPC mapping of the contract, with the codes of `JSON_RPC_CODES`.
 * Unknown, foreign and expired task ids share one message so an id reveals nothing.
 */
export const TASK_NOT_FOUND_MESSAGE = 'Task not found';

/**
 * A JSON-RPC error for the requestor: the tools' `ProtocolError`. The SDK sends its `code`,
 * `message` and `data` as they are (its own McpError would prefix the message with "MCP
 * error …", which clients then prefix again).
 */
export const WireError = ProtocolError;
export type WireError = ProtocolError;

/** Server-defined JSON-RPC code for an admission refused by the active-task limit (public name of `JSON_RPC_CODES.tooManyTasks`). */
export const TOO_MANY_TASKS = JSON_RPC_CODES.tooManyTasks;

export function taskNotFound(): WireError {
  return new WireError(JSON_RPC_CODES.invalidParams, TASK_NOT_FOUND_MESSAGE);
}

export function methodNotFound(message: string): WireError {
  return new WireError(JSON_RPC_CODES.methodNotFound, message);
}

export function invalidParams(message: string): WireError {
  return new WireError(JSON_RPC_CODES.invalidParams, message);
}

export { wireTask } from '../tools/task-views.js';

/** `tasks/get`: the Task, or invalid params for an id that is not the caller's (unknown, foreign, expired alike). */
export function encodeTask(outcome: GetTaskOutcome): ReturnType<typeof wireTask> {
  if (outcome.kind === 'not-found') throw taskNotFound();
  return wireTask(outcome.record);
}

/** `tasks/result`: what the call would have answered; invalid params for a miss or a wait the requestor gave up first. */
export function encodeResult(outcome: AwaitResultOutcome): ToolResult {
  if (outcome.kind === 'not-found') throw taskNotFound();
  if (outcome.kind === 'abandoned') throw invalidParams('the request was abandoned before the task finished');
  return wireResult(outcome.record);
}

/** `tasks/cancel`: the Task, now cancelled; a terminal task is invalid params, as the 2025-11-25 spec says. */
export function encodeCancel(outcome: CancelTaskResult): ReturnType<typeof wireTask> {
  switch (outcome.kind) {
    case 'cancelled':
      return wireTask(outcome.record);
    case 'terminal':
      throw invalidParams(`Task ${outcome.record.taskId} is already ${outcome.record.status} and cannot be cancelled`);
    case 'not-supported':
      throw methodNotFound('tasks/cancel is not supported');
    case 'not-found':
      throw taskNotFound();
  }
}

/** `tasks/list`: one page, `nextCursor` only when more exist; a bad cursor is invalid params. */
export function encodePage(outcome: ListTasksOutcome): { tasks: Array<ReturnType<typeof wireTask>>; nextCursor?: string } {
  switch (outcome.kind) {
    case 'page':
      return Object.assign({ tasks: outcome.records.map(wireTask) }, outcome.nextCursor === null ? {} : { nextCursor: outcome.nextCursor });
    case 'invalid-cursor':
      throw invalidParams('Invalid cursor');
    case 'not-supported':
      throw methodNotFound('tasks/list is not supported');
  }
}

/**
 * What `tasks/result` returns for a terminal record: the stored `CallToolResult` with the
 * related-task `_meta`, or the stored JSON-RPC error, thrown, exactly as the call itself would
 * have answered. A cancelled task has no result; it answers an `isError` result that says so,
 * never a late success, even if the work finished after the cancellation.
 */
export function wireResult(record: TaskRecord): ToolResult {
  if (record.status !== 'cancelled' && isStoredError(record.result)) {
    const { code, message, data } = record.result.error;
    throw new ProtocolError(code, message, data);
  }
  const related = { [META_KEYS.relatedTask]: { taskId: record.taskId } };
  if (record.status === 'cancelled' || record.result === null || typeof record.result !== 'object') {
    const text = record.status === 'cancelled' ? `Task ${record.taskId} was cancelled` : `Task ${record.taskId} ${record.status} without a result`;
    return { content: [{ type: 'text', text }], isError: true, _meta: related };
  }
  const stored = record.result as ToolResult & { _meta?: Record<string, unknown> };
  return Object.assign({}, stored, { _meta: Object.assign({}, stored._meta, related) });
}
