import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { encodeStepValue, MAX_STEP_NAME_CHARS } from '../core/step-value.js';
import type { StepError } from '../core/step-rules.js';
import { isStorableText } from '../core/text.js';
import { TasklatchError } from '../core/errors.js';
import { ProtocolError } from './protocol-error.js';

/** What a step's function is given: a signal and which attempt this is. */
export interface StepContext {
  /**
   * Aborts when the run stops (cancelled, expired, lease lost, drained) and when the attempt runs
   * past the step's `timeoutMs`. Pass it to what the step waits on.
   */
  signal: AbortSignal;
  /** 1 for the first attempt, 2 for the first retry, … (counted across runs of a task). */
  attempt: number;
}

/** How one step is run: its retries and the time each attempt may take. */
export interface StepConfig {
  /**
   * Attempts after the first one that throws (`limit`, default 0: none), each after a wait of
   * `random(0, min(maxDelayMs, baseDelayMs · 2^(n-1)))` ms (full jitter; defaults 1000 and
   * 60000). In a task the wait is durable: the task sleeps and holds no worker meanwhile.
   */
  retries?: { limit: number; baseDelayMs?: number; maxDelayMs?: number };
  /** How long each attempt may take (ms): past it the attempt's signal aborts and it counts as thrown. */
  timeoutMs?: number;
}

/** How a wait for an event is made (`ctx.step.waitForEvent`). */
export interface WaitForEventOptions {
  /** The event type waited for: the first event of this type sent to the task, and not taken by another wait, is this wait's. */
  type: string;
  /** How long to wait (ms, from when the wait is first reached): past it the wait returns null. */
  timeoutMs: number;
}

/** A step's function: its value must be JSON (or `undefined`, for a step run for its side effect). */
export type StepFunction<T> = (ctx: StepContext) => Promise<T> | T;

/**
 * Durable steps and timers (`ctx.step`). In a task, `do` records its function's JSON value in
 * the task's journal with one fenced write, and every later run of the handler (after a
 * takeover, a drain, an answer, a sleep) gets the recorded value without calling the function
 * again: a step runs at least once and is recorded exactly once (`now`, `random` and `uuid` are
 * such steps, for a value a later run must see again). `sleep` suspends the task
 * without holding a worker until its time comes. Names are unique within a task, and a name's
 * row replays wherever a run reaches it (a branch of a `Promise.all` too); a step the journal does
 * not hold may run only where the journal's run did not go on without it (else the run stops with
 * `step order changed …`; `patched` lets a changed handler take the old path on old tasks). In a
 * plain call a step just runs its function and a sleep waits in process.
 */
export interface Step {
  do<T>(name: string, fn: StepFunction<T>): Promise<T>;
  do<T>(name: string, config: StepConfig, fn: StepFunction<T>): Promise<T>;
  /** Waits `ms` milliseconds (a task: durably, without a worker). */
  sleep(name: string, ms: number): Promise<void>;
  /** Waits until `when` (a Date or epoch milliseconds); at once if it has passed. */
  sleepUntil(name: string, when: Date | number): Promise<void>;
  /**
   * A key stable across every run of the task for this step (`task:<taskId>:step:<name>`; in a
   * plain call unique per call): name the step's own side effect after it (an upstream
   * request id) so that an attempt repeated after a crash is idempotent too.
   */
  idempotencyKey(name: string): string;
  /**
   * The time (epoch milliseconds) the task first reached this step, recorded like a `do` step's
   * value: every later run gets the same number. Branch on this, never on `Date.now()`.
   */
  now(name: string): Promise<number>;
  /** A number in [0, 1) drawn once and recorded: every later run gets the same one. */
  random(name: string): Promise<number>;
  /** A random UUID (v4) drawn once and recorded: every later run gets the same one. */
  uuid(name: string): Promise<string>;
  /**
   * A patch gate: `true` where a run reaches it fresh (a marker named `id` is recorded in the
   * journal, so every later run of the task answers `true` again), `false` where the task's
   * journal went on past this point without it (a task started before the gate was deployed:
   * nothing is recorded, and the handler takes the old path). `if (await ctx.step.patched('add-a2'))`
   * around a step added to a handler lets old tasks replay as they were and new ones run it.
   * Ids have a namespace of their own (a gate may carry a step's name); asking twice in a run
   * answers the same. In a plain call: `true`.
   */
  patched(id: string): Promise<boolean>;
  /**
   * Waits for an event of `options.type` sent to the task (`runtime.sendEvent`, `tasklatch tasks
   * send-event`, the operator's `POST /events`) and returns its JSON payload, or `null` once
   * `timeoutMs` has passed. In a task the wait is durable: the task is suspended (no worker) until
   * the event comes or the time passes, and every later run gets the same value. An event sent
   * before the wait is reached is kept and taken here. In a plain call: an error (no task to send to).
   */
  waitForEvent<T = unknown>(name: string, options: WaitForEventOptions): Promise<T | null>;
  /**
   * Starts `tool` (another tool of the same application) as a child task of the same principal
   * and waits for it without holding a worker: the task suspends until the child ends, and
   * returns the child's result (its `CallToolResult`); a child that fails, is cancelled or expires
   * throws `StepFailedError`. The child is found again by the step's name on every run of the
   * task (its idempotency key is derived from the task and `name`): a run started again after a
   * crash never starts a second one. `Promise.all` of several fans out and in. A child never
   * outlives its parent (`ttlMs` is cut to the parent's expiry), a cancelled parent cancels its
   * running children, and the requestor's `tasks/list` shows the parent only. In a plain call it
   * throws: only a task has children.
   */
  runTool(name: string, tool: string, args?: Record<string, unknown>, options?: ChildOptions): Promise<ChildResult>;
}

/** A child task's result as its tool returned it (a `CallToolResult`): `structuredContent` carries its data. */
export interface ChildResult {
  content: Array<{ type: string; [key: string]: unknown }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

/** How a child task is started (`Step.runTool`). */
export interface ChildOptions {
  /** The child's ttl (ms), within the service's bounds and never past its parent's expiry; absent: the default ttl, cut the same way. */
  ttlMs?: number;
}

/**
 * `now`, `random` and `uuid` as steps of `run` (a `do`): each is a named step at its position
 * in the journal (kind `do`), so a task records its value once and replays it, and a plain call
 * just computes it. `clock` is the run's clock.
 */
export function valueSteps(run: <T>(name: string, fn: StepFunction<T>) => Promise<T>, clock: () => number = Date.now): Pick<Step, 'now' | 'random' | 'uuid'> {
  return {
    now: (name) => run(name, () => clock()),
    random: (name) => run(name, () => Math.random()),
    uuid: (name) => run(name, () => randomUUID()),
  };
}

/**
 * A step that failed for good (its retries used up, or a value JSON cannot carry): thrown into
 * the handler, which may catch it. A task's later runs throw the same recorded error again
 * without running the step.
 */
export class StepFailedError extends Error {
  override readonly name = 'StepFailedError';

  constructor(
    /** The step's name. */
    readonly step: string,
    /** Attempts made. */
    readonly attempts: number,
    /** The last attempt's error as recorded: its message and, for an Error, its name. */
    readonly error: StepError,
  ) {
    super(error.message);
  }
}

/** Whole milliseconds any timer can wait (Node's setTimeout bound). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Retries one step may ask for: more is a mistake, not a policy. */
const MAX_RETRIES = 1000;

/** The error a thrown value is recorded as. */
export function stepErrorOf(error: unknown): StepError {
  if (error instanceof Error) return { message: error.message, ...(error.name === 'Error' ? {} : { name: error.name }) };
  return { message: String(error) };
}

/** A name no journal could keep ends the call: a bug in the tool, like a bad ask. */
export function checkStepName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_CHARS || !isStorableText(name)) {
    throw new ProtocolError(
      JSON_RPC_CODES.internalError,
      `a step name is text of 1 to ${MAX_STEP_NAME_CHARS} characters, not ${JSON.stringify(String(name).slice(0, 60))}`,
    );
  }
}

function isMs(n: unknown, max: number, positive: boolean): n is number {
  return typeof n === 'number' && Number.isFinite(n) && (positive ? n > 0 : n >= 0) && n <= max;
}

/** The arguments of `do(name, [config], fn)`, checked: a malformed config ends the call naming the step. */
export function doArguments<T>(name: string, configOrFn: StepConfig | StepFunction<T>, maybeFn?: StepFunction<T>): { config: StepConfig; fn: StepFunction<T> } {
  checkStepName(name);
  const fn = typeof configOrFn === 'function' ? configOrFn : maybeFn;
  const config = typeof configOrFn === 'function' ? {} : configOrFn;
  const bad = (what: string) => new ProtocolError(JSON_RPC_CODES.internalError, `step ${JSON.stringify(name)}: ${what}`);
  if (typeof fn !== 'function') throw bad('step.do needs a function');
  if (typeof config !== 'object' || config === null) throw bad('the step config must be an object');
  const { retries, timeoutMs } = config;
  if (timeoutMs !== undefined && !isMs(timeoutMs, MAX_TIMER_MS, true)) throw bad(`timeoutMs must be a positive number of milliseconds up to ${MAX_TIMER_MS}`);
  if (retries !== undefined) {
    if (typeof retries !== 'object' || retries === null) throw bad('retries must be an object { limit, baseDelayMs?, maxDelayMs? }');
    if (!Number.isInteger(retries.limit) || retries.limit < 0 || retries.limit > MAX_RETRIES)
      throw bad(`retries.limit must be a whole number from 0 to ${MAX_RETRIES}`);
    if (retries.baseDelayMs !== undefined && !isMs(retries.baseDelayMs, MAX_TIMER_MS, false)) throw bad('retries.baseDelayMs must be a number of milliseconds');
    if (retries.maxDelayMs !== undefined && !isMs(retries.maxDelayMs, 2 ** 47, false)) throw bad('retries.maxDelayMs must be a number of milliseconds');
  }
  return { config, fn };
}

/** A sleep's length, checked: a NaN or negative wait is a bug in the tool. */
export function checkSleepMs(name: string, ms: unknown): number {
  checkStepName(name);
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > 2 ** 47) {
    throw new ProtocolError(
      JSON_RPC_CODES.internalError,
      `sleep ${JSON.stringify(name)}: ms must be a number of milliseconds from 0 to 2^47, not ${String(ms)}`,
    );
  }
  return Math.ceil(ms);
}

/** A sleepUntil instant as epoch milliseconds, checked. */
export function wakeTimeOf(name: string, when: unknown): number {
  checkStepName(name);
  const ms = when instanceof Date ? when.getTime() : when;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > 2 ** 52) {
    throw new ProtocolError(JSON_RPC_CODES.internalError, `sleep ${JSON.stringify(name)}: sleepUntil needs a valid Date or epoch milliseconds`);
  }
  return Math.ceil(ms);
}

/**
 * Runs one attempt of a step's function: its signal aborts with the run (`signal`) and past
 * `timeoutMs`; the attempt ends then even if the function ignores its signal (whatever it still
 * does is at-least-once work whose value nobody records).
 */
export async function runStepAttempt<T>(name: string, fn: StepFunction<T>, attempt: number, signal: AbortSignal, timeoutMs: number | undefined): Promise<T> {
  signal.throwIfAborted();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_resolve, reject) => {
    onAbort = () => {
      controller.abort(signal.reason);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        const error = new Error(`step ${JSON.stringify(name)} timed out after ${timeoutMs} ms`);
        error.name = 'TimeoutError';
        controller.abort(error);
        reject(error);
      }, timeoutMs);
    }
  });
  try {
    return await Promise.race([Promise.resolve().then(() => fn({ signal: controller.signal, attempt })), stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
    // The race's loser must not become an unhandled rejection.
    stopped.catch(() => undefined);
  }
}

/** Waits `ms` in process (longer than one timer can wait, too), ending early when `signal` aborts. */
export async function waitFor(ms: number, signal: AbortSignal): Promise<void> {
  try {
    for (let left = ms; left > 0; left -= MAX_TIMER_MS) await sleep(Math.min(left, MAX_TIMER_MS), undefined, { signal });
  } catch (error) {
    // The timer's own AbortError says less than why the call was stopped.
    signal.throwIfAborted();
    throw error;
  }
  signal.throwIfAborted();
}

/**
 * A step's value as a later run gets it back: JSON text and the value parsed from it (so the
 * first run and every replay see the same thing). A value JSON cannot carry exactly fails the
 * step for good, naming it and where the value breaks.
 */
export function recordableValue(name: string, attempts: number, value: unknown): { value: unknown; bytes: number } {
  let encoded: { text: string | null; bytes: number };
  try {
    encoded = encodeStepValue(name, value);
  } catch (error) {
    throw new StepFailedError(name, attempts, { message: error instanceof Error ? error.message : String(error) });
  }
  return { value: encoded.text === null ? undefined : (JSON.parse(encoded.text) as unknown), bytes: encoded.bytes };
}

/**
 * The steps of a callback that runs several times within one call (an SDK 2.x tool's rounds:
 * it returns `input_required`, is asked, and runs again from the top). A name an earlier round
 * reached gives back that round's outcome instead of taking a new position; a name used twice
 * within one round is still the duplicate it is. Call the returned function once per round.
 */
export function roundSteps(step: Step): () => Step {
  const outcomes = new Map<string, Promise<unknown>>();
  return () => {
    const mine = new Set<string>();
    const once = <T>(name: string, run: () => Promise<T>): Promise<T> => {
      const earlier = outcomes.get(name);
      const fresh = !mine.has(name);
      mine.add(name);
      if (earlier !== undefined && fresh) return earlier as Promise<T>;
      const outcome = run();
      outcomes.set(name, outcome);
      return outcome;
    };
    return {
      do: <T>(name: string, configOrFn: StepConfig | StepFunction<T>, fn?: StepFunction<T>) =>
        once(name, () => (fn === undefined ? step.do(name, configOrFn as StepFunction<T>) : step.do(name, configOrFn as StepConfig, fn))),
      sleep: (name, ms) => once(name, () => step.sleep(name, ms)),
      sleepUntil: (name, when) => once(name, () => step.sleepUntil(name, when)),
      idempotencyKey: (name) => step.idempotencyKey(name),
      now: (name) => once(name, () => step.now(name)),
      random: (name) => once(name, () => step.random(name)),
      uuid: (name) => once(name, () => step.uuid(name)),
      // A gate answers the same for the whole call (a task's runner keeps one answer per id).
      patched: (id) => step.patched(id),
      waitForEvent: <T>(name: string, options: WaitForEventOptions) => once(name, () => step.waitForEvent<T>(name, options)),
      runTool: (name, tool, args, options) => once(name, () => step.runTool(name, tool, args, options)),
    };
  };
}

/**
 * The durable steps tasklatch passes to a tool registered with an MCP SDK `McpServer` (1.x:
 * the handler's `extra`; 2.x: the callback's `ctx`), typed: `const step = stepOf(extra)`.
 * Throws for a call tasklatch did not run (a plain call the SDK answered itself has none).
 */
export function stepOf(extraOrCtx: unknown): Step {
  const step = (extraOrCtx as { step?: Step } | null | undefined)?.step;
  if (typeof step?.do !== 'function') throw new TasklatchError('INVALID_INPUT', 'this call was not run by tasklatch: its context carries no durable steps');
  return step;
}
