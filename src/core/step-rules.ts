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
 * - **patch**: a marker (`ctx.step.patched(id)`) saying that a run reached a patch gate fresh and
 *   took its new path; every later run of the task takes it again.
 * - **journal**: a task's recorded steps, sleeps and patch markers. A step or sleep is known by its
 *   name (unique within its task), a marker by its id: a run replays the row of a name wherever
 *   it reaches it. Positions (shared with asks) only order the rows: a fresh entry takes the next
 *   one after every recorded position.
 * - **child**: a task the handler started (`ctx.step.runTool`), `waiting` until it ends, then
 *   `completed` with its result or `failed` (child-rules.ts).
 * - **concurrent**: a row whose step was in flight together with another step of its run (one
 *   was called while the other was called and not yet recorded or returned). The order check
 *   (`decideFreshEntry`) skips such rows: another branch of the handler may reach them later.
 */

export const STEP_KINDS = ['do', 'sleep', 'patch', 'event', 'child'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/**
 * `completed` and `failed` are final (a `do` step's value or error, replayed for ever; a patch
 * marker is `completed`); `retrying` waits for its next attempt until `wakeAt`; `sleeping` waits
 * until `wakeAt`; `woke` is a sleep a run has passed (its time came), final; `waiting` is a wait
 * for an event (`ctx.step.waitForEvent`) until one comes or `wakeAt` (its timeout) passes, which
 * ends `completed` with the event's payload, or null at the timeout (event-rules.ts); or a child
 * task started and not yet ended (its value: the child's task id; see child-rules.ts).
 */
export const STEP_STATUSES = ['completed', 'failed', 'retrying', 'sleeping', 'woke', 'waiting'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** The statuses each kind may be recorded with. */
export const STEP_KIND_STATUSES: Readonly<Record<StepKind, readonly StepStatus[]>> = {
  do: ['completed', 'failed', 'retrying'],
  sleep: ['sleeping', 'woke'],
  patch: ['completed'],
  event: ['waiting', 'completed'],
  child: ['waiting', 'completed', 'failed'],
};

/**
 * The namespace a row's name is unique in: steps and sleeps share one (a name is one step of a
 * task), patch markers have their own, so a gate may carry the name of a step (`patched('ship')`
 * beside `do('ship')`). The stores restate it in their unique index (`kind = 'patch'`).
 */
export function stepNameSpace(kind: StepKind): 'step' | 'patch' {
  return kind === 'patch' ? 'patch' : 'step';
}

/** Whether a row of `status` waits for `wakeAt` (or, `woke`, keeps when it was due). */
export function hasWakeTime(status: StepStatus): boolean {
  return status === 'sleeping' || status === 'retrying' || status === 'woke' || status === 'waiting';
}

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
  /** `sleeping` and `retrying`: when the task is due again; `woke`: when the sleep was due. */
  wakeAt: Millis | null;
  /** Whether the step was in flight together with another step of its run (`decideFreshEntry` skips it). */
  concurrent: boolean;
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
  /** The row's `concurrent` flag (absent: false). */
  concurrent?: boolean;
  startedAt: Millis;
}

export function isFinalStep(status: StepStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'woke';
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
 * journal's order: a row at this position under another name or kind, a row of this name (in its
 * namespace, `stepNameSpace`: `byName` is that row) at another position, or a final row at this
 * position refuse the write (an unfinished row of the same name and kind may be overwritten: a
 * retry's next attempt, a sleep suspended again with the same wake time, or marked `woke` with it
 * once that time has come). Then the value's size, and last the journal's (`journal`: absent, no
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
  if (atPosition !== undefined && !mayOverwrite(atPosition, step, now)) return 'BLOCK_STEP_ORDER';
  if (input.valueBytes > input.maxStepBytes) return 'BLOCK_STEP_SIZE';
  if (input.journal !== undefined && overJournalBounds(input.journal, atPosition === undefined, input.valueBytes)) return 'BLOCK_JOURNAL_LIMIT';
  return 'APPLY_STEP';
}

/**
 * A journal row the write may replace: the same step, not final; a sleep only with its own wake
 * time, again (`sleeping`) or passed (`woke`, once that time has come).
 */
function mayOverwrite(
  row: Pick<StepRecord, 'name' | 'kind' | 'status' | 'wakeAt'>,
  step: Pick<StepWrite, 'name' | 'kind' | 'status' | 'wakeAt'>,
  now: Millis,
): boolean {
  if (row.name !== step.name || row.kind !== step.kind || isFinalStep(row.status)) return false;
  if (row.status !== 'sleeping') return true;
  if ((step.wakeAt ?? null) !== row.wakeAt) return false;
  return step.status === 'sleeping' || (step.status === 'woke' && row.wakeAt !== null && row.wakeAt <= now);
}

/** What a run does where its handler reaches a step or sleep, from the journal (`decideStepReplay`). */
export type StepReplay =
  /** Run the step's function (nothing recorded, or a retry whose time has come): this attempt. */
  | { kind: 'RUN'; attempt: number }
  /** A completed step: its recorded value. */
  | { kind: 'RETURN'; value: unknown }
  /** A failed step: its recorded error, thrown again. */
  | { kind: 'THROW'; error: StepError }
  /** A sleep or a retry not yet due: suspend again until `wakeAt`. */
  | { kind: 'WAIT'; wakeAt: Millis }
  /** A sleep whose time has come: go on; `wake`: the row still says `sleeping`, the run marks it `woke`. */
  | { kind: 'DONE'; wake: boolean }
  /** A child task started and not seen to end (`waiting`, the child's id its value): look at the child. */
  | { kind: 'AWAIT'; taskId: string }
  /** The journal holds this name as another kind (`expected`, as `describeStep` says it, at `position`). */
  | { kind: 'ORDER'; position: number; expected: string };

/**
 * The replay of a step or sleep the handler reaches: the journal's row of that name (`named`, in
 * the step namespace; absent: the step is fresh, and `decideFreshEntry` says whether it may run)
 * says what the run does, wherever the handler reaches it (identity by name: a branch reached
 * after another one's await replays as well as one reached first). The same name as another kind
 * is an order change.
 */
export function decideStepReplay(input: {
  named: Pick<StepRecord, 'position' | 'name' | 'kind' | 'status' | 'attempts' | 'value' | 'error' | 'wakeAt'> | undefined;
  name: string;
  kind: Exclude<StepKind, 'patch'>;
  now: Millis;
}): StepReplay {
  const { named: row, now } = input;
  if (row === undefined) return { kind: 'RUN', attempt: 1 };
  if (row.kind !== input.kind) return { kind: 'ORDER', position: row.position, expected: describeStep(row.kind, row.name) };
  switch (row.status) {
    case 'completed':
      return { kind: 'RETURN', value: row.value };
    case 'failed':
      return { kind: 'THROW', error: row.error ?? { message: `step ${JSON.stringify(row.name)} failed` } };
    case 'retrying':
      return row.wakeAt !== null && row.wakeAt > now ? { kind: 'WAIT', wakeAt: row.wakeAt } : { kind: 'RUN', attempt: row.attempts + 1 };
    case 'sleeping':
      return row.wakeAt !== null && row.wakeAt > now ? { kind: 'WAIT', wakeAt: row.wakeAt } : { kind: 'DONE', wake: true };
    case 'woke':
      return { kind: 'DONE', wake: false };
    case 'waiting':
      // A child task not yet ended (child-rules.ts), or an event wait, whose replay is `decideEventWait`'s.
      if (row.kind === 'child') return { kind: 'AWAIT', taskId: String(row.value) };
      return row.wakeAt !== null && row.wakeAt > now ? { kind: 'WAIT', wakeAt: row.wakeAt } : { kind: 'DONE', wake: false };
  }
}

/**
 * One entry of the journal as the order check sees it: a row (its kind, name, position and
 * `concurrent` flag), or a stored ask (kind `ask`, its keys comma-separated as the name; an ask
 * is never concurrent).
 */
export interface JournalEntry {
  position: number;
  kind: StepKind | 'ask';
  name: string;
  concurrent: boolean;
}

/** What a run does with an entry the journal does not hold (`decideFreshEntry`). */
export type FreshEntry =
  /** Nothing recorded is still ahead of it: run it (a step), record it (a marker), store it (an ask). */
  | { kind: 'FRESH' }
  /** The journal went on without it: `expected` (as `describeEntry` says it) at `position` is still to come. */
  | { kind: 'ORDER'; position: number; expected: string };

/**
 * The order check, for an entry the handler reaches fresh (a step or sleep whose name the
 * journal does not hold, an ask not stored, a patch gate without its marker). `unreached` are the
 * journal's entries this run has not reached yet. One of them that is not `concurrent` and not a
 * patch marker means the handler changed: the journal's run went on to that entry without this
 * one (a step inserted before a recorded one), so the fresh entry must not run. The lowest such
 * position is the one named. Concurrent rows do not count (another branch may reach them yet),
 * nor do markers (a retired gate is never reached again), nor rows never reached at all by the
 * time the handler returns (a branch taken away at the end).
 */
export function decideFreshEntry(input: { unreached: readonly JournalEntry[] }): FreshEntry {
  let first: JournalEntry | undefined;
  for (const entry of input.unreached) {
    if (entry.concurrent || entry.kind === 'patch') continue;
    if (first === undefined || entry.position < first.position) first = entry;
  }
  return first === undefined ? { kind: 'FRESH' } : { kind: 'ORDER', position: first.position, expected: describeEntry(first) };
}

/** What a patch gate answers (`decidePatch`): `RECORD` its marker and take the new path, or not. */
export type PatchDecision = { kind: 'REPLAY' } | { kind: 'RECORD' } | { kind: 'SKIP'; position: number; expected: string };

/**
 * A patch gate (`ctx.step.patched(id)`): with its marker in the journal the run replays the new
 * path (`REPLAY`: true); reached fresh (`decideFreshEntry` says `FRESH`) the marker is recorded
 * and the new path taken (`RECORD`: true); a journal that went past this point without it is
 * replayed on the old path (`SKIP`: false, nothing recorded).
 */
export function decidePatch(input: { marker: Pick<StepRecord, 'kind'> | undefined; unreached: readonly JournalEntry[] }): PatchDecision {
  if (input.marker !== undefined) return { kind: 'REPLAY' };
  const fresh = decideFreshEntry({ unreached: input.unreached });
  return fresh.kind === 'FRESH' ? { kind: 'RECORD' } : { kind: 'SKIP', position: fresh.position, expected: fresh.expected };
}

/**
 * A gate that answered `false` (`SKIP`, the journal's entry at `position` still ahead) was wrong
 * when the handler, past the gate, reaches a fresh entry and the order check stops at that very
 * entry, still unreached: the old path never reaches it, so the journal went on along the gate's
 * new path (a task a handler started with the change but without its gate). Those gates' ids
 * come back: their markers are recorded and the run starts again, told `true`. An order error at
 * any other entry revises nothing (the run stops as any mismatch does).
 */
export function decideGateRevision(input: { skipped: readonly { id: string; position: number }[]; order: { position: number } }): string[] {
  return input.skipped.filter((gate) => gate.position === input.order.position).map((gate) => gate.id);
}

/** How an order error names a journal entry: `step "charge-card"`, `sleep "cool-down"`, `patch "add-a2"`. */
export function describeStep(kind: StepKind, name: string): string {
  return `${kind === 'do' ? 'step' : kind === 'event' ? 'event wait' : kind} ${JSON.stringify(name)}`;
}

/** How an order error names an entry of `decideFreshEntry`. */
export function describeEntry(entry: Pick<JournalEntry, 'kind' | 'name'>): string {
  return entry.kind === 'ask' ? describeAsk([entry.name]) : describeStep(entry.kind, entry.name);
}

/** How an order error names an ask: `ask "confirm"` (its keys, comma-separated). */
export function describeAsk(keys: readonly string[]): string {
  return `ask ${JSON.stringify(keys.join(','))}`;
}

/** The error that stops a run whose handler no longer matches its journal. */
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
