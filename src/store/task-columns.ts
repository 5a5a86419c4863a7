import type { ListedTask, TaskStatus } from '../core/types.js';

/**
 * The columns of the \`tasks\` table, the same in every SQL dialect, in the order the migrations
 * create them: inserts, upserts and row mappings of both stores list them from here.
 */
export const TASK_COLUMNS = [
  'task_id',
  'auth_key',
  'tool_name',
  'status',
  'status_message',
  'version',
  'created_at_ms',
  'last_updated_at_ms',
  'ttl_ms',
  'expires_at_ms',
  'poll_interval_ms',
  'request_digest',
  'idempotency_key',
  'request',
  'cancel_requested',
  'result',
  'result_digest',
  'correlation_id',
  'attempt',
  'lease_owner',
  'lease_expires_at_ms',
  'app',
  'tool_digest',
  'tool_version',
  'parent_task_id',
] as const;

/**
 * The columns a listing reads (`ListedTask`), in both dialects: a `tasks/list` page leaves the
 * request, the result and the lease in the table. The listed shape's every form is in this file:
 * these columns, a row of them as a task (`listedOfRow`), a record cut to it (`listedTask`).
 */
export const LISTED_COLUMNS = ['task_id', 'status', 'status_message', 'version', 'created_at_ms', 'last_updated_at_ms', 'ttl_ms', 'poll_interval_ms'] as const;

/** A listing's row, as either driver returns it (PostgreSQL's int8 as a string). */
export type ListedRow = {
  task_id: string;
  status: string;
  status_message: string | null;
  version: number;
  created_at_ms: number | string;
  last_updated_at_ms: number | string;
  ttl_ms: number | string | null;
  poll_interval_ms: number | null;
};

/** The fields of `record` a listing shows, and no others (a fresh object): the memory store's page. */
export function listedTask(record: ListedTask): ListedTask {
  return {
    taskId: record.taskId,
    status: record.status,
    statusMessage: record.statusMessage,
    version: record.version,
    createdAt: record.createdAt,
    lastUpdatedAt: record.lastUpdatedAt,
    ttl: record.ttl,
    pollInterval: record.pollInterval,
  };
}

/** A listing's row as the task it shows; the CHECK constraint admits only the five statuses. */
export function listedOfRow(row: ListedRow): ListedTask {
  return {
    taskId: row.task_id,
    status: row.status as TaskStatus,
    statusMessage: row.status_message,
    version: row.version,
    createdAt: Number(row.created_at_ms),
    lastUpdatedAt: Number(row.last_updated_at_ms),
    ttl: row.ttl_ms === null ? null : Number(row.ttl_ms),
    pollInterval: row.poll_interval_ms,
  };
}
