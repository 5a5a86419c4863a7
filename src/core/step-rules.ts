import type { StepDecision } from './decisions.js';
import { holdsFence } from './dispatch-rules.js';
import { isExpired } from './time.js';
import { isTerminal, type Fence, type Millis, type TaskRecord } from './types.js';

/**
 * The step surface: a task's journal of durable steps.
 *
 * - **step**: one named unit of a handler (`ctx.step.do`) whose JSON value is recorded once, so
 *   that every later run of the handler gets the value without running the step again.
 * - **sleep**: a named wait (`ctx.step.sleep`, `sleepUntil`) recorded with its wake time; the task
 *   is suspended (no lease, no worker slot) until then.
 * - **journal**: a task's recorded steps and sleeps, by position. Steps, sleeps and asks share one
 *   position counter per run (0, 1, 2, …): a run that reaches another name at a position the
 *   journal holds has changed order, and its task ends `failed`.
 */

export const STEP_KINDS = ['do', 'sleep'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/**
 * `completed` and `failed` are final (a `do` step's value or error, replayed for ever);
 * `retrying` waits for its next attempt until `wakeAt`; `sleeping` waits until `wakeAt`.
 */
export const STEP_STATUSES = ['completed', 'failed', 'retrying', 'sleeping'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** The statuses each kind may be recorded with. */
export const STEP_KIND_STATUSES: Readonly<Record<StepKind, readonly StepStatus[]>> = {
  do: ['completed', 'failed', 'retrying'],
  sleep: ['sleeping'],
};

/** A step's recorded error: what the handler sees again as `StepFailedError`. */
export interface StepError {
  message: string;
  name?: string;
}

/** One row of a task's journal. */
export interface StepRecord {
  taskId: string;
  position: number;
  name: string;
  kind: StepKind;
  status: StepStatus;
  /** Attempts made so far (`do`); 0 for a sleep. */
  attempts: number;
  /** The recorded value (`completed` only; `undefined` for a step run for its side effect). */
  value: unknown;
  /** `failed` and `retrying`: the last attempt's error. */
  error: StepError | null;
  /** Bytes of the value's JSON text (0 without one). */
  valueBytes: number;
  /** `sleeping` and `retrying`: when the task is due again. */
  wakeAt: Millis | null;
  startedAt: Millis;
  updatedAt: Millis;
}

/** What a run asks the journal to record at one position. */
export interface StepWrite {
  position: number;
  name: string;
  kind: StepKind;
  status: StepStatus;
  attempts: number;
  value?: unknown;
  error?: StepError | null;
  wakeAt?: Millis | null;
  startedAt: Millis;
}

export function isFinalStep(status: StepStatus): boolean {
  return status === 'completed' || status === 'failed';
}

/** The part of a record the step rules read. */
export type SteppedRecord = Pick<TaskRecord, 'taskId' | 'authKey' | 'status' | 'version' | 'expiresAt' | 'leaseOwner'>;

/**
 * The rest of a task's journal beside the row a write would leave: the rows at other positions
 * and the bytes of their values' JSON. A journal holds at most `maxSteps` rows and `maxBytes` of
 * values (null: no bound); a step's error and name are bounded per row, so the two bound it whole.
 */
export interface JournalSize {
  others: { steps: number; bytes: number };
  maxSteps: number | null;
  maxBytes: number | null;
}

/**
 * Whether a row at a new position, or a value of `valueBytes`, would take the journal past its
 * bounds. A row without a value adds no bytes: it is not refused for the bytes the journal holds
 * (a bound lowered below them still lets a step's failure or a sleep be recorded).
 */
export function overJournalBounds(size: JournalSize, newRow: boolean, valueBytes: number): boolean {
  if (newRow && size.maxSteps !== null && size.others.steps + 1 > size.maxSteps) return true;
  return valueBytes > 0 && size.maxBytes !== null && size.others.bytes + valueBytes > size.maxBytes;
}

/**
 * Record one step, in its precedence: the task must exist for the run's auth key, be unexpired
 * and not terminal, and still be held by the run (its fence, on a `working` task). Then the
 * journal's order: a row at this position under another name or kind, a row of this name at
 * another position, or a final row at this position refuse the write (an unfinished row of the
 * same name and kind may be overwritten: a retry's next attempt, a sleep suspended again with
 * the same wake time). Then the value's size, and last the journal's (`journal`: absent, no
 * bound). Only `APPLY_STEP` writes.
 */
export function decideStepRecord(input: {
  record: SteppedRecord | null;
  auth: string;
  fence: Fence;
  now: Millis;
  atPosition: Pick<StepRecord, 'position' | 'name' | 'kind' | 'status' | 'wakeAt'> | undefined;
  byName: Pick<StepRecord, 'position'> | undefined;
  step: Pick<StepWrite, 'position' | 'name' | 'kind' | 'status' | 'wakeAt'>;
  valueBytes: number;
  maxStepBytes: number;
  journal?: JournalSize;
}): StepDecision {
  const { record, fence, now, atPosition, step } = input;
  if (record === null) return 'NOT_FOUND';
  if (record.authKey !== input.auth) return 'BLOCK_AUTH';
  if (isExpired(record, now)) return 'BLOCK_EXPIRED';
  if (isTerminal(record.status)) return 'BLOCK_TERMINAL_REWRITE';
  if (record.status !== 'working' || !holdsFence(record, fence, now)) return 'BLOCK_STALE_VERSION';
  if (input.byName !== undefined && input.byName.position !== step.position) return 'BLOCK_STEP_ORDER';
  if (atPosition !== undefined && !mayOverwrite(atPosition, step)) return 'BLOCK_STEP_ORDER';
  if (input.valueBytes > input.maxStepBytes) return 'BLOCK_STEP_SIZE';
  if (input.journal !== undefined && overJournalBounds(input.journal, atPosition === undefined, input.valueBytes)) return 'BLOCK_JOURNAL_LIMIT';
  return 'APPLY_STEP';
}

/** A journal row the write may replace: the same step, not final; a sleep only with its own wake time. */
function mayOverwrite(row: Pick<StepRecord, 'name' | 'kind' | 'status' | 'wakeAt'>, step: Pick<StepWrite, 'name' | 'kind' | 'status' | 'wakeAt'>): boolean {
  if (row.name !== step.name || row.kind !== step.kind || isFinalStep(row.status)) return false;
  return row.status !== 'sleeping' || (step.status === 'sleeping' && (step.wakeAt ?? null) === row.wakeAt);
}

/** What a run does at one position of its handler, from the journal (`decideStepReplay`). */
export type StepReplay =
  /** Run the step's function (nothing recorded, or a retry whose time has come): this attempt. */
  | { kind: 'RUN'; attempt: number }
  /** A completed step: its recorded value. */
  | { kind: 'RETURN'; value: unknown }
  /** A failed step: its recorded error, thrown again. */
  | { kind: 'THROW'; error: StepError }
  /** A sleep or a retry not yet due: suspend again until `wakeAt`. */
  | { kind: 'WAIT'; wakeAt: Millis }
  /** A sleep whose time has come: go on. */
  | { kind: 'DONE' }
  /** The journal holds something else here (`expected`, as `describeJournalEntry` says it): the task fails. */
  | { kind: 'ORDER'; expected: string };

/**
 * The replay of one position: what the journal (`journalAt`, or an ask stored at it, `askAt`)
 * says the run reaching `name` of `kind` there does. Another name or kind is an order change.
 */
export function decideStepReplay(input: {
  journalAt: Pick<StepRecord, 'name' | 'kind' | 'status' | 'attempts' | 'value' | 'error' | 'wakeAt'> | undefined;
  askAt?: { keys: readonly string[] } | undefined;
  name: string;
  kind: StepKind;
  now: Millis;
}): StepReplay {
  const { journalAt: row, now } = input;
  if (input.askAt !== undefined) return { kind: 'ORDER', expected: describeAsk(input.askAt.keys) };
  if (row === undefined) return { kind: 'RUN', attempt: 1 };
  if (row.name !== input.name || row.kind !== input.kind) return { kind: 'ORDER', expected: describeStep(row.kind, row.name) };
  switch (row.status) {
    case 'completed':
      return { kind: 'RETURN', value: row.value };
    case 'failed':
      return { kind: 'THROW', error: row.error ?? { message: `step ${JSON.stringify(row.name)} failed` } };
    case 'retrying':
      return row.wakeAt !== null && row.wakeAt > now ? { kind: 'WAIT', wakeAt: row.wakeAt } : { kind: 'RUN', attempt: row.attempts + 1 };
    case 'sleeping':
      return row.wakeAt !== null && row.wakeAt > now ? { kind: 'WAIT', wakeAt: row.wakeAt } : { kind: 'DONE' };
  }
}

/** How an order error names a journal entry: `step "charge-card"`, `sleep "cool-down"`. */
export function describeStep(kind: StepKind, name: string): string {
  return `${kind === 'do' ? 'step' : 'sleep'} ${JSON.stringify(name)}`;
}

/** How an order error names an ask: `ask "confirm"` (its keys, comma-separated). */
export function describeAsk(keys: readonly string[]): string {
  return `ask ${JSON.stringify(keys.join(','))}`;
}

/** The error that ends a task whose run changed order. */
export function stepOrderMessage(position: number, expected: string, actual: string): string {
  return `step order changed at position ${position}: the journal has ${expected} and this run asked for ${actual}`;
}

/** The error that ends a task whose run used one name twice. */
export function duplicateStepMessage(name: string): string {
  return `step name ${JSON.stringify(name)} used twice`;
}

/** A step's retry policy (`StepConfig.retries`); absent fields take the defaults. */
export interface StepRetryPolicy {
  limit: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export const DEFAULT_STEP_BASE_DELAY_MS = 1000;
export const DEFAULT_STEP_MAX_DELAY_MS = 60_000;

/**
 * The wait before the attempt after failed attempt `attempt` (1, 2, …): exponential backoff with
 * full jitter, `random(0, min(maxDelayMs, baseDelayMs · 2^(attempt-1)))`, whole milliseconds.
 * `random` is passed in (a number in [0, 1)) so that the rule stays pure.
 */
export function retryDelay(attempt: number, policy: StepRetryPolicy, random: () => number): number {
  const base = policy.baseDelayMs ?? DEFAULT_STEP_BASE_DELAY_MS;
  const max = policy.maxDelayMs ?? DEFAULT_STEP_MAX_DELAY_MS;
  const cap = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * Math.max(0, cap));
}

/** Whether failed attempt `attempt` leaves another one under `policy` (limit 0: none). */
export function mayRetry(attempt: number, policy: StepRetryPolicy | undefined): boolean {
  return policy !== undefined && attempt < policy.limit + 1;
}
