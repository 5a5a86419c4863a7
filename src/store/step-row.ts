import type { JournalSize, StepError, StepKind, StepRecord, StepStatus } from '../core/step-rules.js';
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
  /** SQLite: 0 or 1; PostgreSQL: a boolean. */
  concurrent: number | boolean;
  started_at_ms: number | string;
  updated_at_ms: number | string;
}

/**
 * A journal row as a step record. Its value stays JSON text until it is first read (then parsed
 * once, and the text let go): a run replaying a large journal holds each value once, as text
 * until the handler reaches its step, instead of every value as text and as parsed objects at once.
 */
export function rowToStep(row: StepRow): StepRecord {
  const step = {
    taskId: row.task_id,
    position: row.position,
    name: row.name,
    kind: row.kind as StepKind,
    status: row.status as StepStatus,
    attempts: row.attempts,
    value: undefined as unknown,
    error: row.error === null ? null : (JSON.parse(row.error) as StepError),
    valueBytes: row.value_bytes,
    wakeAt: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
    concurrent: row.concurrent === true || row.concurrent === 1,
    startedAt: Number(row.started_at_ms),
    updatedAt: Number(row.updated_at_ms),
  };
  if (row.value !== null) lazyValue(step, row.value);
  return step;
}

/** Makes `step.value` the JSON `text`, parsed on first read; an own enumerable property still (copies, equality and JSON see it). */
function lazyValue(step: { value: unknown }, text: string): void {
  let pending: string | null = text;
  let value: unknown;
  Object.defineProperty(step, 'value', {
    enumerable: true,
    configurable: true,
    get(): unknown {
      if (pending !== null) {
        value = decodeStepValue(pending);
        pending = null;
      }
      return value;
    },
    set(next: unknown) {
      pending = null;
      value = next;
    },
  });
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
    concurrent: step.concurrent,
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
    concurrent: step.concurrent,
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
  'concurrent',
  'started_at_ms',
  'updated_at_ms',
] as const;

/**
 * The row of the journal-size statement of both SQL stores (`count(*)`, `sum(value_bytes)` over
 * the task's rows at other positions; pg returns both as strings) as the rules read it.
 */
export function journalSizeOf(
  row: { steps: number | string; bytes: number | string | null } | undefined,
  bounds: { maxJournalSteps?: number | null; maxJournalBytes?: number | null },
): JournalSize {
  return {
    others: { steps: Number(row?.steps ?? 0), bytes: Number(row?.bytes ?? 0) },
    maxSteps: bounds.maxJournalSteps ?? null,
    maxBytes: bounds.maxJournalBytes ?? null,
  };
}

/** The journal-size statement's text, the same in both SQL stores (`task_id`, then `position`, as `$1`/`$2` or `?`). */
export function journalSizeSql(taskId: string, position: string): string {
  return `SELECT count(*) AS steps, coalesce(sum(value_bytes), 0) AS bytes FROM task_steps WHERE task_id = ${taskId} AND position <> ${position}`;
}
