import { decideStepRecord, stepNameSpace, type JournalSize, type StepRecord } from '../../core/step-rules.js';
import { checkSuspension, prepareStepWrite, type PreparedStep } from '../../core/step-value.js';
import { isExpired } from '../../core/time.js';
import { classifyMiss } from '../../core/visibility.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import { stepDetail } from '../step-detail.js';
import type { AuditEntry, RecordStepInput, RecordStepOutcome, StepsOutcome, TaskRef } from '../types.js';

/**
 * The step role of the memory store, over the store's own maps. Like every memory operation each
 * function runs to completion without awaiting, so it is atomic by construction.
 */
export interface MemoryStepState {
  readonly tasks: ReadonlyMap<string, TaskRecord>;
  /** taskId → its journal rows in position order: the task_steps table of the SQL stores. */
  readonly journal: Map<string, StepRecord[]>;
  /** The outbox: a suspension makes the task's open entry due at the wake time, not before. */
  readonly outbox: ReadonlyMap<string, { availableAt: Millis; doneAt: Millis | null }>;
  readonly audit: { append(line: AuditEntry): void };
}

export function recordStepIn(state: MemoryStepState, input: RecordStepInput): RecordStepOutcome {
  const step = prepareStepWrite(input.step);
  checkSuspension(input.suspend);
  const { authKey, taskId } = input.fence;
  const task = state.tasks.get(taskId) ?? null;
  const rows = state.journal.get(taskId) ?? [];
  const decision = decideStepRecord({
    record: task,
    auth: authKey,
    fence: input.fence,
    now: input.now,
    atPosition: rows.find((r) => r.position === step.position),
    byName: rows.find((r) => r.name === step.name && stepNameSpace(r.kind) === stepNameSpace(step.kind)),
    step,
    valueBytes: step.valueBytes,
    maxStepBytes: input.maxStepBytes,
    journal: journalSize(
      input,
      rows.filter((r) => r.position !== step.position),
    ),
  });
  if (decision === 'APPLY_STEP' && task !== null) {
    state.journal.set(taskId, upsert(rows, journalRow(taskId, step, input.now, rows)));
    if (input.suspend) {
      task.version += 1;
      task.lastUpdatedAt = input.now;
      task.statusMessage = input.suspend.statusMessage;
      task.attempt = 0;
      task.leaseOwner = null;
      task.leaseExpiresAt = null;
      const entry = state.outbox.get(taskId);
      if (entry !== undefined && entry.doneAt === null) entry.availableAt = input.suspend.wakeAt;
    }
  }
  const visible = task !== null && task.authKey === authKey ? task : null;
  const detail = stepDetail(step);
  state.audit.append(auditLine({ at: input.now, surface: 'step', decision, authKey, taskId, correlationId: input.correlationId, record: visible, detail }));
  return { decision, record: visible === null ? null : structuredClone(visible) };
}

/** The rest of the journal beside the row a write would leave, and its bounds. */
function journalSize(input: RecordStepInput, others: readonly StepRecord[]): JournalSize {
  const bytes = others.reduce((sum, r) => sum + r.valueBytes, 0);
  return { others: { steps: others.length, bytes }, maxSteps: input.maxJournalSteps ?? null, maxBytes: input.maxJournalBytes ?? null };
}

/** The row a write leaves: the prepared step, its start kept from the row it replaces. */
function journalRow(taskId: string, step: PreparedStep, now: Millis, rows: readonly StepRecord[]): StepRecord {
  const prior = rows.find((r) => r.position === step.position);
  return {
    taskId,
    position: step.position,
    name: step.name,
    kind: step.kind,
    status: step.status,
    attempts: step.attempts,
    value: step.valueText === null ? undefined : JSON.parse(step.valueText),
    error: step.error,
    valueBytes: step.valueBytes,
    wakeAt: step.wakeAt,
    concurrent: step.concurrent,
    startedAt: prior?.startedAt ?? step.startedAt,
    updatedAt: now,
  };
}

/** `rows` with `row` in its position's place, in position order. */
function upsert(rows: readonly StepRecord[], row: StepRecord): StepRecord[] {
  return [...rows.filter((r) => r.position !== row.position), row].sort((a, b) => a.position - b.position);
}

export function stepsOf(state: MemoryStepState, { authKey, taskId, now }: TaskRef & { now: Millis }): StepsOutcome {
  const miss = classifyMiss(state.tasks.get(taskId) ?? null, authKey, now);
  if (miss !== null) return { decision: miss, steps: null };
  return { decision: 'FOUND', steps: structuredClone(state.journal.get(taskId) ?? []) };
}

/** The operator's read: a task's journal whatever its auth key. */
export function journalOf(state: MemoryStepState, taskId: string): StepRecord[] {
  return structuredClone(state.journal.get(taskId) ?? []);
}

/** Working, unexpired tasks with a wait still to come (`sleepingTasks`). */
export function sleepingIn(state: MemoryStepState, now: Millis): number {
  let n = 0;
  for (const [taskId, rows] of state.journal) {
    const task = state.tasks.get(taskId);
    if (task === undefined || task.status !== 'working' || isExpired(task, now)) continue;
    if (rows.some((r) => (r.status === 'sleeping' || r.status === 'retrying') && r.wakeAt !== null && r.wakeAt > now)) n++;
  }
  return n;
}

/** Seeding: each row as it is, replacing a stored row of the same task at its position or with its name (in its namespace). */
export function seedSteps(state: MemoryStepState, steps: readonly StepRecord[]): void {
  for (const step of steps) {
    const rows = (state.journal.get(step.taskId) ?? []).filter((r) => r.name !== step.name || stepNameSpace(r.kind) !== stepNameSpace(step.kind));
    state.journal.set(step.taskId, upsert(rows, structuredClone(step)));
  }
}
