import type { StepError, StepKind, StepRecord, StepStatus } from '../core/step-rules.js';
import { decodeStepValue, type PreparedStep } from '../core/step-value.js';
import type { Millis } from '../core/types.js';

/**
 * A `task_steps` row, the same columns in both SQL stores: SQLite returns integers as numbers,
 * pg returns int8 (`wake_at_ms`, `started_at_ms`, `updated_at_ms`) as strings. `value` and
 * `error` are JSON text in both (PostgreSQL keeps them as text, not jsonb, so a value comes back
 * exactly as written).
 */
export interface StepRow {
  task_id: string;
  position: number;
  name: string;
  kind: string;
  status: string;
  attempts: number;
  value: string | null;
  error: string | null;
  value_bytes: number;
  wake_at_ms: number | string | null;
  started_at_ms: number | string;
  updated_at_ms: number | string;
}

export function rowToStep(row: StepRow): StepRecord {
  return {
    taskId: row.task_id,
    position: row.position,
    name: row.name,
    kind: row.kind as StepKind,
    status: row.status as StepStatus,
    attempts: row.attempts,
    value: decodeStepValue(row.value),
    error: row.error === null ? null : (JSON.parse(row.error) as StepError),
    valueBytes: row.value_bytes,
    wakeAt: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
    startedAt: Number(row.started_at_ms),
    updatedAt: Number(row.updated_at_ms),
  };
}

/** The row a checked write leaves (a replaced row keeps its `started_at_ms`: the upserts leave it). */
export function preparedToRow(taskId: string, step: PreparedStep, now: Millis): StepRow {
  return {
    task_id: taskId,
    position: step.position,
    name: step.name,
    kind: step.kind,
    status: step.status,
    attempts: step.attempts,
    value: step.valueText,
    error: step.errorText,
    value_bytes: step.valueBytes,
    wake_at_ms: step.wakeAt,
    started_at_ms: step.startedAt,
    updated_at_ms: now,
  };
}

/** A seeded journal row as it is (replay, copies between stores). */
export function stepToRow(step: StepRecord): StepRow {
  return {
    task_id: step.taskId,
    position: step.position,
    name: step.name,
    kind: step.kind,
    status: step.status,
    attempts: step.attempts,
    value: step.value === undefined ? null : JSON.stringify(step.value),
    error: step.error === null ? null : JSON.stringify(step.error),
    value_bytes: step.valueBytes,
    wake_at_ms: step.wakeAt,
    started_at_ms: step.startedAt,
    updated_at_ms: step.updatedAt,
  };
}

/** The journal's columns, in the order of `StepRow`. */
export const STEP_COLUMNS = [
  'task_id',
  'position',
  'name',
  'kind',
  'status',
  'attempts',
  'value',
  'error',
  'value_bytes',
  'wake_at_ms',
  'started_at_ms',
  'updated_at_ms',
] as const;
