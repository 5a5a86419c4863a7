import { TasklatchError } from './errors.js';
import { hasWakeTime, STEP_KIND_STATUSES, STEP_KINDS, type StepError, type StepKind, type StepStatus, type StepWrite } from './step-rules.js';
import { isStorableText } from './text.js';
import { formatTimestamp } from './time.js';
import type { Millis } from './types.js';

/** The longest step name a journal keeps (names come from handler code, not from requestors). */
export const MAX_STEP_NAME_CHARS = 200;
/** A recorded error's message is clipped to this many characters (a thrown error may carry anything). */
export const MAX_STEP_ERROR_CHARS = 4000;
/** Nesting deeper than this is refused rather than walked (a value is data, not a linked list). */
const MAX_DEPTH = 256;
/** Positions and attempts are SQL INTEGER columns. */
const MAX_INT = 2 ** 31 - 1;

/** A step write checked and encoded once, for every store alike (`prepareStepWrite`). */
export interface PreparedStep {
  position: number;
  name: string;
  kind: StepKind;
  status: StepStatus;
  attempts: number;
  /** `completed` only: the value and its JSON text (null for `undefined`). */
  value: unknown;
  valueText: string | null;
  valueBytes: number;
  /** `failed` and `retrying` only: the error (message clipped) and its JSON text. */
  error: StepError | null;
  errorText: string | null;
  /** `sleeping`, `retrying` and `woke` only. */
  wakeAt: Millis | null;
  /** The row's `concurrent` flag. */
  concurrent: boolean;
  startedAt: Millis;
}

/**
 * Checks a step write's shape and encodes its value, throwing `INVALID_INPUT` for a write no
 * store could keep as given (so nothing is written): a name that is empty, too long or not
 * storable text; a kind with a status it cannot have; a wait without its wake time; a failure
 * without its error; a value JSON cannot carry exactly (`encodeStepValue`). A value's size is a
 * decision (`BLOCK_STEP_SIZE`), not an error. Fields a status does not use are dropped.
 */
export function prepareStepWrite(step: StepWrite): PreparedStep {
  const where = `step ${JSON.stringify(String(step.name).slice(0, MAX_STEP_NAME_CHARS))}`;
  if (typeof step.name !== 'string' || step.name.length === 0 || step.name.length > MAX_STEP_NAME_CHARS || !isStorableText(step.name)) {
    throw invalid(`a step name is text of 1 to ${MAX_STEP_NAME_CHARS} characters (no NUL, no lone surrogate)`);
  }
  if (!isCount(step.position)) throw invalid(`${where}: position must be a whole number from 0 to ${MAX_INT}`);
  if (!isCount(step.attempts)) throw invalid(`${where}: attempts must be a whole number from 0 to ${MAX_INT}`);
  if (!(STEP_KINDS as readonly string[]).includes(step.kind)) throw invalid(`${where}: kind must be one of ${STEP_KINDS.join(', ')}`);
  if (!STEP_KIND_STATUSES[step.kind].includes(step.status)) {
    throw invalid(`${where}: a ${step.kind} step is recorded ${STEP_KIND_STATUSES[step.kind].join(' or ')}, not ${String(step.status)}`);
  }
  if (!isInstant(step.startedAt)) throw invalid(`${where}: startedAt must be epoch milliseconds`);
  // A child's waiting row may carry a recheck time; an event's, a sleep's and a retry's must carry theirs.
  const waits = hasWakeTime(step.status) && (step.kind !== 'child' || (step.wakeAt ?? null) !== null);
  if (step.concurrent !== undefined && typeof step.concurrent !== 'boolean') throw invalid(`${where}: concurrent must be true or false`);
  if (waits && !isInstant(step.wakeAt)) throw invalid(`${where}: a ${step.status} step needs its wakeAt (epoch milliseconds)`);
  const fails = step.status === 'failed' || step.status === 'retrying';
  const error = fails ? checkedError(where, step.error) : null;
  // A waiting child's row keeps the child's task id as its value.
  const keeps = step.status === 'completed' || step.status === 'waiting';
  const encoded = keeps ? encodeStepValue(step.name, step.value) : { text: null, bytes: 0 };
  return {
    position: step.position,
    name: step.name,
    kind: step.kind,
    status: step.status,
    attempts: step.attempts,
    value: keeps ? step.value : undefined,
    valueText: encoded.text,
    valueBytes: encoded.bytes,
    error,
    errorText: error === null ? null : JSON.stringify(error),
    wakeAt: waits ? (step.wakeAt as Millis) : null,
    concurrent: step.concurrent === true,
    startedAt: step.startedAt,
  };
}

function checkedError(where: string, error: StepError | null | undefined): StepError {
  if (error === null || error === undefined || typeof error.message !== 'string')
    throw invalid(`${where}: a failed or retrying step needs its error ({ message })`);
  if (error.name !== undefined && typeof error.name !== 'string') throw invalid(`${where}: an error's name is text`);
  const clipped: StepError = { message: clip(error.message, MAX_STEP_ERROR_CHARS) };
  if (error.name !== undefined) clipped.name = clip(error.name, MAX_STEP_NAME_CHARS);
  return clipped;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

/**
 * A step's value as the journal keeps it: its JSON text (null for `undefined`, a step run for its
 * side effect) and that text's size in UTF-8 bytes. Throws `INVALID_INPUT` naming the step and
 * where the value breaks for anything JSON cannot carry exactly: functions, bigints, symbols,
 * NaN and ±Infinity, cycles, `undefined` in an array, and objects other than plain objects and
 * arrays (a Date too: return `date.toISOString()`). An `undefined` property is dropped, as JSON does.
 */
export function encodeStepValue(name: string, value: unknown): { text: string | null; bytes: number } {
  if (value === undefined) return { text: null, bytes: 0 };
  const problem = jsonProblem(value, '$', new Set(), 0);
  if (problem !== null) throw invalid(`step ${JSON.stringify(name)} returned a value JSON cannot carry exactly: ${problem}`);
  const text = JSON.stringify(value);
  return { text, bytes: new TextEncoder().encode(text).length };
}

/** The recorded value of a journal row's text: `undefined` for none (SQL NULL). */
export function decodeStepValue(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}

function jsonProblem(value: unknown, path: string, open: Set<object>, depth: number): string | null {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(value) ? null : `${String(value)} at ${path}`;
    case 'object':
      return value === null ? null : objectProblem(value, path, open, depth);
    default:
      return `a ${typeof value} at ${path}`;
  }
}

function objectProblem(value: object, path: string, open: Set<object>, depth: number): string | null {
  if (depth >= MAX_DEPTH) return `nesting deeper than ${MAX_DEPTH} levels at ${path}`;
  if (open.has(value)) return `a cycle at ${path}`;
  if (value instanceof Date) return `a Date at ${path} (return date.toISOString())`;
  const isArray = Array.isArray(value);
  const proto: unknown = Object.getPrototypeOf(value);
  if (!isArray && proto !== Object.prototype && proto !== null) return `${describeInstance(value)} at ${path}`;
  if (Object.getOwnPropertySymbols(value).length > 0) return `a symbol key at ${path}`;
  open.add(value);
  try {
    if (isArray) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item === undefined) return `undefined at ${path}[${i}]`;
        const problem = jsonProblem(item, `${path}[${i}]`, open, depth + 1);
        if (problem !== null) return problem;
      }
      return null;
    }
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue;
      const problem = jsonProblem(item, `${path}.${key}`, open, depth + 1);
      if (problem !== null) return problem;
    }
    return null;
  } finally {
    open.delete(value);
  }
}

function describeInstance(value: object): string {
  const name = (value.constructor as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' && name.length > 0 ? `a ${name} instance` : 'an object that is not a plain object';
}

/** The error of a value over the journal's bound (`BLOCK_STEP_SIZE`), naming the step and both sizes. */
export function stepSizeMessage(name: string, bytes: number, maxStepBytes: number): string {
  return `step ${JSON.stringify(name)} returned ${bytes} bytes of JSON, more than the ${maxStepBytes} bytes a step may record`;
}

/** The error of a step at a new position of a journal that holds `maxSteps` rows already (nothing is recorded). */
export function journalStepsMessage(name: string, maxSteps: number): string {
  return `step ${JSON.stringify(name)} not recorded: this task's journal holds its ${maxSteps} steps already (maxJournalSteps)`;
}

/** The error of a value that would take a journal's values past `maxBytes` (recorded as the step's failure). */
export function journalBytesMessage(name: string, bytes: number, recorded: number, maxBytes: number): string {
  return `step ${JSON.stringify(name)} returned ${bytes} bytes of JSON; with the ${recorded} bytes this task's journal holds, that is more than the ${maxBytes} bytes it may (maxJournalBytes)`;
}

/** A write refused by the store's journal bounds (`BLOCK_JOURNAL_LIMIT`), naming both. */
export function journalLimitMessage(name: string, maxSteps: number | null, maxBytes: number | null): string {
  const bounds = [maxSteps === null ? null : `${maxSteps} steps (maxJournalSteps)`, maxBytes === null ? null : `${maxBytes} bytes of values (maxJournalBytes)`];
  return `step ${JSON.stringify(name)} not recorded: this task's journal is full; it holds at most ${bounds.filter((b) => b !== null).join(' and ')}`;
}

/** The status message of a task sleeping in a step. */
export function sleepingMessage(name: string, wakeAt: Millis): string {
  return `sleeping until ${formatTimestamp(wakeAt)} (step ${JSON.stringify(name)})`;
}

/** The status message of a task waiting to retry a step (`attempt` of `of` attempts allowed). */
export function retryingMessage(name: string, attempt: number, of: number, wakeAt: Millis): string {
  return `retrying step ${JSON.stringify(name)} (attempt ${attempt} of ${of}) at ${formatTimestamp(wakeAt)}`;
}

/**
 * Refuses a suspension no store could keep (`INVALID_INPUT`): a wake time that is not epoch
 * milliseconds, a status message that is not storable text (no NUL, no lone surrogate).
 */
export function checkSuspension(suspend: { wakeAt: unknown; statusMessage: unknown } | null | undefined): void {
  if (suspend === null || suspend === undefined) return;
  if (!isInstant(suspend.wakeAt)) throw invalid(`a suspension's wakeAt must be epoch milliseconds, not ${String(suspend.wakeAt)}`);
  if (typeof suspend.statusMessage !== 'string' || !isStorableText(suspend.statusMessage)) {
    throw invalid("a suspension's status message is text (no NUL, no lone surrogate)");
  }
}

/** Refuses a journal position no store could keep (`INVALID_INPUT`): a whole number from 0 to 2^31 - 1. */
export function checkJournalPosition(position: unknown): void {
  if (!isCount(position)) throw invalid(`a journal position must be a whole number from 0 to ${MAX_INT}, not ${String(position)}`);
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_INT;
}

function isInstant(n: unknown): n is Millis {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

function invalid(message: string): TasklatchError {
  return new TasklatchError('INVALID_INPUT', message);
}
