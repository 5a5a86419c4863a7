import { withParent } from '../admission-record.js';
import type { Decision } from '../../core/decisions.js';
import type { InputRequest, StoredInput } from '../../core/input-rules.js';
import type { TaskRecord, TaskStatus } from '../../core/types.js';
import { isStorableJson, unstorableError } from '../storable.js';
import type { AuditEntry } from '../types.js';

/**
 * A `tasks` row as pg returns it: int8 arrives as a string (as a number where the row comes as
 * JSON: the batched read, read-batcher.ts, and the answer of a write of one task,
 * predicates.ts `appliedAsJson`), jsonb already parsed.
 */
export interface TaskRow {
  task_id: string;
  auth_key: string;
  tool_name: string | null;
  status: string;
  status_message: string | null;
  version: number;
  created_at_ms: string | number;
  last_updated_at_ms: string | number;
  ttl_ms: string | number | null;
  expires_at_ms: string | number | null;
  poll_interval_ms: number | null;
  request_digest: string | null;
  idempotency_key: string | null;
  request: unknown;
  cancel_requested: boolean;
  result: unknown;
  result_digest: string | null;
  correlation_id: string | null;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at_ms: string | number | null;
  app: string;
  tool_digest: string | null;
  /** Absent from rows read before migration 011 was applied (a store is migrated when it opens). */
  tool_version?: string | null;
  /** Absent from rows read before the parent column was added. */
  parent_task_id?: string | null;
}

/** A `task_inputs` row as pg returns it. */
export interface InputRow {
  task_id: string;
  input_key: string;
  ask_seq: number;
  request: unknown;
  request_digest: string;
  asked_at_ms: string;
  response: unknown;
  response_digest: string | null;
  answered_at_ms: string | null;
  deadline_ms: string | null;
  position: number | null;
}

export interface AuditRow {
  at_ms: string | null;
  surface: string | null;
  decision: string | null;
  auth_key: string | null;
  task_id: string | null;
  correlation_id: string | null;
  status: string | null;
  version: number | null;
  detail: string | null;
}

/**
 * pg's global int8 parser is left alone (other code in the process may rely on it), so bigint
 * columns become numbers here: epoch milliseconds stay far below 2^53. `recordToRow` yields values
 * in `TASK_COLUMNS` order (`src/store/task-columns.ts`).
 */
function num(value: string | number): number {
  return typeof value === 'number' ? value : Number(value);
}

function numOrNull(value: string | number | null): number | null {
  return value === null ? null : num(value);
}

/**
 * JSON text for a jsonb parameter, or SQL NULL. Explicit because pg would send a JS array as a
 * PostgreSQL array literal, not JSON. A value holding a NUL or a lone surrogate is refused here,
 * as `INVALID_INPUT`, while its caller builds its statement: jsonb refuses either, and in a batch
 * it would fail every write beside it.
 */
export function toJson(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const text = JSON.stringify(value);
  if (!isStorableJson(text)) throw unstorableError('a JSON value');
  return text;
}

/** The row a write of one task answered with as JSON (predicates.ts `appliedAsJson`), if it wrote one. */
export function appliedTaskRow(result: { rows: unknown[] } | undefined): TaskRow | undefined {
  return (result?.rows[0] as { task: TaskRow } | undefined)?.task;
}

export function rowToRecord(row: TaskRow): TaskRecord {
  return withParent(row.parent_task_id, {
    taskId: row.task_id,
    authKey: row.auth_key,
    app: row.app,
    toolName: row.tool_name,
    toolDigest: row.tool_digest,
    toolVersion: row.tool_version ?? null,
    // The CHECK constraint admits only the five statuses.
    status: row.status as TaskStatus,
    statusMessage: row.status_message,
    version: row.version,
    createdAt: num(row.created_at_ms),
    lastUpdatedAt: num(row.last_updated_at_ms),
    ttl: numOrNull(row.ttl_ms),
    expiresAt: numOrNull(row.expires_at_ms),
    pollInterval: row.poll_interval_ms,
    requestDigest: row.request_digest,
    idempotencyKey: row.idempotency_key,
    request: row.request,
    cancelRequested: row.cancel_requested,
    result: row.result,
    resultDigest: row.result_digest,
    correlationId: row.correlation_id,
    attempt: row.attempt,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: numOrNull(row.lease_expires_at_ms),
  });
}

/** The values of a record in `TASK_COLUMNS` order: the positional parameters of a row. */
export function recordToRow(r: TaskRecord): unknown[] {
  return [
    r.taskId,
    r.authKey,
    r.toolName,
    r.status,
    r.statusMessage,
    r.version,
    r.createdAt,
    r.lastUpdatedAt,
    r.ttl,
    r.expiresAt,
    r.pollInterval,
    r.requestDigest,
    r.idempotencyKey,
    toJson(r.request),
    r.cancelRequested,
    toJson(r.result),
    r.resultDigest,
    r.correlationId,
    r.attempt,
    r.leaseOwner,
    r.leaseExpiresAt,
    r.app,
    r.toolDigest,
    r.toolVersion,
    r.parentTaskId ?? null,
  ];
}

export function rowToAudit(row: AuditRow): AuditEntry {
  const entry: AuditEntry = {
    at: num(row.at_ms ?? 0),
    surface: row.surface as AuditEntry['surface'],
    decision: row.decision as Decision,
    authKey: row.auth_key ?? '',
    taskId: row.task_id,
    correlationId: row.correlation_id ?? '',
    status: row.status,
    version: row.version,
  };
  // The shape of auditLine: `detail` only when there is one.
  if (row.detail !== null) entry.detail = row.detail;
  return entry;
}

/** The positional parameters of an audit row: `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)`. */
export function auditToRow(entry: AuditEntry): unknown[] {
  return [
    entry.at,
    entry.surface,
    entry.decision,
    entry.authKey,
    entry.taskId,
    entry.correlationId,
    entry.status ?? null,
    entry.version ?? null,
    entry.detail ?? null,
  ];
}

/** The parameters of `insertAuditLines`: one array per column, the lines in order. */
export function auditColumns(entries: readonly AuditEntry[]): unknown[][] {
  const rows = entries.map(auditToRow);
  return Array.from({ length: 9 }, (_, column) => rows.map((row) => row[column]));
}

export function rowToInput(row: InputRow): StoredInput {
  return {
    taskId: row.task_id,
    key: row.input_key,
    askSeq: row.ask_seq,
    request: row.request as InputRequest,
    requestDigest: row.request_digest,
    askedAt: num(row.asked_at_ms),
    response: row.response,
    responseDigest: row.response_digest,
    answeredAt: numOrNull(row.answered_at_ms),
    deadlineAt: numOrNull(row.deadline_ms),
    ...(row.position === null ? {} : { position: row.position }),
  };
}

/** The parameters of `upsertInput`: task id, key, ask seq, request, its digest, asked at, response, its digest, answered at, deadline, position. */
export function inputToRow(input: StoredInput): unknown[] {
  return [
    input.taskId,
    input.key,
    input.askSeq,
    toJson(input.request),
    input.requestDigest,
    input.askedAt,
    toJson(input.response),
    input.responseDigest,
    input.answeredAt,
    input.deadlineAt,
    input.position ?? null,
  ];
}

/**
 * Whether `value` fits an int4 column (a version); anything else matches no stored row, so the
 * caller classifies such a write without sending it (the statement would fail on the cast).
 */
export function isInt4(value: number): boolean {
  return Number.isInteger(value) && value >= -2_147_483_648 && value <= 2_147_483_647;
}
