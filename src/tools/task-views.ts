import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { formatTimestamp } from '../core/time.js';
import type { ListedTask, TaskRecord, TaskStatus } from '../core/types.js';
import { isStoredError } from './protocol-error.js';

/**
 * The two views of one stored task, one per protocol generation: the 2025-11-25 spec's `Task`
 * (`wireTask`: `ttl`, `pollInterval`, the stored status) and the 2026-07-28 tasks extension's
 * (`taskFields`: `ttlMs`, `pollIntervalMs`, `isError` results read as `completed`). Both wires
 * and the task tools build their answers here, so a record reads the same wherever it is shown.
 */

/**
 * The flat Task fields of the 2025-11-25 spec, from a stored record or a listed task: what
 * `tasks/get` and `tasks/list` answer on that wire and what the task tools put in
 * `structuredContent` for clients without tasks.
 */
export function wireTask(record: ListedTask): {
  taskId: string;
  status: TaskRecord['status'];
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttl: number | null;
  pollInterval?: number;
} {
  return {
    taskId: record.taskId,
    status: record.status,
    ...(record.statusMessage === null ? {} : { statusMessage: record.statusMessage }),
    createdAt: formatTimestamp(record.createdAt),
    lastUpdatedAt: formatTimestamp(record.lastUpdatedAt),
    ttl: record.ttl,
    ...(record.pollInterval === null ? {} : { pollInterval: record.pollInterval }),
  };
}

/** The flat `Task` fields of the 2026-07-28 tasks extension. */
export function taskFields(record: TaskRecord): Record<string, unknown> {
  return addTaskFields({}, record);
}

/**
 * Adds the flat `Task` fields to `view`, in the wire's order, by assignment: a poll builds one
 * object for its answer, not a fields object spread into another.
 */
function addTaskFields(view: Record<string, unknown>, record: TaskRecord): Record<string, unknown> {
  view.taskId = record.taskId;
  view.status = statusOn2026(record);
  if (record.statusMessage !== null) view.statusMessage = record.statusMessage;
  view.createdAt = formatTimestamp(record.createdAt);
  view.lastUpdatedAt = formatTimestamp(record.lastUpdatedAt);
  // A positive integer or null: a ttl of 0 would read as "already gone".
  view.ttlMs = record.ttl === null || record.ttl <= 0 ? null : record.ttl;
  if (record.pollInterval !== null && record.pollInterval > 0) view.pollIntervalMs = record.pollInterval;
  return view;
}

/**
 * The status a record has on the 2026-07-28 wire. The stored status is the 2025-11-25 reading,
 * where a tool result with `isError` ends a task `failed`; there `failed` means only a JSON-RPC
 * error during execution, and an `isError` result is a `completed` task with that result.
 */
export function statusOn2026(record: Pick<TaskRecord, 'status' | 'result'>): TaskStatus {
  if (record.status === 'failed' && !isStoredError(record.result) && typeof record.result === 'object' && record.result !== null) return 'completed';
  return record.status;
}

/** 2026-07-28 `CreateTaskResult`: `Result & Task`, flat, and nothing of the outcome. */
export function createTaskResult(record: TaskRecord): Record<string, unknown> {
  return addTaskFields({ resultType: 'task' }, record);
}

/** 2026-07-28 `tasks/get`: the task with its outcome inlined (`result` or `error`) once it has one. */
export function detailedTask(record: TaskRecord): Record<string, unknown> {
  const view = addTaskFields({ resultType: 'complete' }, record);
  const status = view.status as TaskStatus;
  if (status === 'completed' && typeof record.result === 'object' && record.result !== null) {
    // Exactly the CallToolResult the call returned, as a complete result of its own.
    view.result = { resultType: 'complete', ...(record.result as Record<string, unknown>) };
  } else if (status === 'failed') {
    const error = isStoredError(record.result)
      ? record.result.error
      : { code: JSON_RPC_CODES.internalError, message: `task ${record.taskId} failed without a result` };
    view.error = error;
    view.statusMessage ??= error.message;
  }
  return view;
}
