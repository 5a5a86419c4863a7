import { withParent } from '../admission-record.js';
import type { InputRequest, StoredInput } from '../../core/input-rules.js';
import type { TaskRecord, TaskStatus } from '../../core/types.js';
import type { AuditEntry } from '../types.js';

/** A `tasks` row as better-sqlite3 returns it. */
export interface TaskRow {
  task_id: string;
  auth_key: string;
  tool_name: string | null;
  status: TaskStatus;
  status_message: string | null;
  version: number;
  created_at_ms: number;
  last_updated_at_ms: number;
  ttl_ms: number | null;
  expires_at_ms: number | null;
  poll_interval_ms: number | null;
  request_digest: string | null;
  idempotency_key: string | null;
  request: string | null;
  cancel_requested: number;
  result: string | null;
  result_digest: string | null;
  correlation_id: string | null;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at_ms: number | null;
  app: string;
  tool_digest: string | null;
  tool_version: string | null;
  /** Absent from rows read before the parent column was added. */
  parent_task_id?: string | null;
}

/** A `task_audit` row. */
export interface AuditRow {
  at_ms: number;
  surface: AuditEntry['surface'];
  decision: AuditEntry['decision'];
  auth_key: string;
  task_id: string | null;
  correlation_id: string;
  status: string | null;
  version: number | null;
  detail: string | null;
}

/** A `task_inputs` row. */
export interface InputRow {
  task_id: string;
  input_key: string;
  ask_seq: number;
  request: string;
  request_digest: string;
  asked_at_ms: number;
  response: string | null;
  response_digest: string | null;
  answered_at_ms: number | null;
  deadline_ms: number | null;
  position: number | null;
}

/** JSON columns: SQL NULL and JSON `null` both mean "nothing stored", as in TaskRecord. */
export function toJson(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function fromJson(text: string | null): unknown {
  return text === null ? null : (JSON.parse(text) as unknown);
}

export function rowToRecord(row: TaskRow): TaskRecord {
  return withParent(row.parent_task_id, {
    taskId: row.task_id,
    authKey: row.auth_key,
    app: row.app,
    toolName: row.tool_name,
    toolDigest: row.tool_digest,
    toolVersion: row.tool_version,
    status: row.status,
    statusMessage: row.status_message,
    version: row.version,
    createdAt: row.created_at_ms,
    lastUpdatedAt: row.last_updated_at_ms,
    ttl: row.ttl_ms,
    expiresAt: row.expires_at_ms,
    pollInterval: row.poll_interval_ms,
    requestDigest: row.request_digest,
    idempotencyKey: row.idempotency_key,
    request: fromJson(row.request),
    cancelRequested: row.cancel_requested !== 0,
    result: fromJson(row.result),
    resultDigest: row.result_digest,
    correlationId: row.correlation_id,
    attempt: row.attempt,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at_ms,
  });
}

/** Named parameters for the `tasks` columns (`@task_id`, …), the inverse of rowToRecord. */
export function recordToRow(record: TaskRecord): TaskRow {
  return {
    task_id: record.taskId,
    auth_key: record.authKey,
    tool_name: record.toolName,
    status: record.status,
    status_message: record.statusMessage,
    version: record.version,
    created_at_ms: record.createdAt,
    last_updated_at_ms: record.lastUpdatedAt,
    ttl_ms: record.ttl,
    expires_at_ms: record.expiresAt,
    poll_interval_ms: record.pollInterval,
    request_digest: record.requestDigest,
    idempotency_key: record.idempotencyKey,
    request: toJson(record.request),
    // better-sqlite3 binds numbers, not booleans.
    cancel_requested: record.cancelRequested ? 1 : 0,
    result: toJson(record.result),
    result_digest: record.resultDigest,
    correlation_id: record.correlationId,
    attempt: record.attempt,
    lease_owner: record.leaseOwner,
    lease_expires_at_ms: record.leaseExpiresAt,
    app: record.app,
    tool_digest: record.toolDigest,
    tool_version: record.toolVersion,
    parent_task_id: record.parentTaskId ?? null,
  };
}

/**
 * An audit row as the trail returns it. `status` and `version` are always present (null when no
 * record was involved), `detail` only when set: the shape of auditLine.
 */
export function rowToAudit(row: AuditRow): AuditEntry {
  const entry: AuditEntry = {
    at: row.at_ms,
    surface: row.surface,
    decision: row.decision,
    authKey: row.auth_key,
    taskId: row.task_id,
    correlationId: row.correlation_id,
    status: row.status,
    version: row.version,
  };
  if (row.detail !== null) entry.detail = row.detail;
  return entry;
}

/** Named parameters for a `task_audit` insert. */
export function auditToRow(entry: AuditEntry): AuditRow {
  return {
    at_ms: entry.at,
    surface: entry.surface,
    decision: entry.decision,
    auth_key: entry.authKey,
    task_id: entry.taskId,
    correlation_id: entry.correlationId,
    status: entry.status ?? null,
    version: entry.version ?? null,
    detail: entry.detail ?? null,
  };
}

export function rowToInput(row: InputRow): StoredInput {
  return {
    taskId: row.task_id,
    key: row.input_key,
    askSeq: row.ask_seq,
    request: JSON.parse(row.request) as InputRequest,
    requestDigest: row.request_digest,
    askedAt: row.asked_at_ms,
    response: fromJson(row.response),
    responseDigest: row.response_digest,
    answeredAt: row.answered_at_ms,
    deadlineAt: row.deadline_ms,
    ...(row.position === null ? {} : { position: row.position }),
  };
}

/** Named parameters for a `task_inputs` insert (its ordinal is the insert's own). */
export function inputToRow(input: StoredInput): InputRow {
  return {
    task_id: input.taskId,
    input_key: input.key,
    ask_seq: input.askSeq,
    request: JSON.stringify(input.request),
    request_digest: input.requestDigest,
    asked_at_ms: input.askedAt,
    response: toJson(input.response),
    response_digest: input.responseDigest,
    answered_at_ms: input.answeredAt,
    deadline_ms: input.deadlineAt,
    position: input.position ?? null,
  };
}
