import { DEFAULT_STORE_OUTAGE_MS } from './ride-through.js';

/** The maxima a task service enforces; every one is documented in the README. */
export interface TaskLimits {
  /** ttl given to a task whose request names none (ms); null = never expires. */
  defaultTtl: number | null;
  /** Largest ttl granted (ms); a larger request is clamped to it. */
  maxTtl: number;
  /** Smallest ttl granted (ms); a smaller request (0 would be dead on arrival) is raised to it. */
  minTtl: number;
  /** pollInterval suggested to requestors (ms). */
  pollInterval: number;
  /** Tasks per `tasks/list` page. */
  pageSize: number;
  /** Non-terminal tasks one auth key may hold at once; null = no limit. */
  maxActiveTasks: number | null;
  /**
   * Unexpired tasks of any status one auth key may hold (finished tasks keep their request and
   * result until their ttl runs out); null = no bound. With the byte bounds below it caps what
   * one caller can make the store keep.
   */
  maxStoredTasks: number | null;
  /** Largest `arguments` of a `tools/call`, as JSON (bytes); larger: invalid params, nothing stored. */
  maxArgumentBytes: number;
  /** Largest stored request of a task (its params as JSON, with `_meta` and what `prepare` returned; bytes). */
  maxRequestBytes: number;
  /** Largest stored result of a task (bytes); a larger one ends the task `failed` with an error saying so. */
  maxResultBytes: number;
  /** Largest value one durable step records (`ctx.step.do`), as JSON (bytes); larger: the step fails, naming both sizes. */
  maxStepBytes: number;
  /**
   * Rows one task's journal holds (steps, sleeps, each recorded once per position); a step past
   * it fails without running (`StepFailedError` naming the bound), nothing recorded; null = no bound.
   */
  maxJournalSteps: number | null;
  /**
   * Bytes of the values one task's journal holds, as JSON (the sum over its steps); a value that
   * would pass it fails its step for good, as one over `maxStepBytes` does; null = no bound.
   */
  maxJournalBytes: number | null;
  /** Largest payload of one event sent to a task (`sendEvent`), as JSON (bytes); larger: refused, nothing stored. */
  maxEventBytes: number;
  /** Events one task keeps unconsumed (sent before its wait reaches them); one more: refused. */
  maxPendingEvents: number;
  /** Largest answer to one question of a task, as JSON (bytes); larger: invalid params, nothing stored. */
  maxAnswerBytes: number;
  /** How long a signed multi-round `requestState` is taken back after it was issued (ms). */
  requestStateMaxAgeMs: number;
  /** Task ids one `subscriptions/listen` may name; more: invalid params. */
  maxListenTaskIds: number;
  /** Open task subscriptions of all callers on one server; one more answers 503 with `Retry-After`. */
  maxSubscriptions: number;
  /** Open task subscriptions of one caller (auth key); one more answers 429 with `Retry-After`. */
  maxSubscriptionsPerCaller: number;
  /**
   * How long a read that waits (a held `tasks/result`, a subscription, a `tasks/get` or
   * `tasks/list`) waits out a store outage before it answers `Store unavailable` (ms; 0: at once).
   */
  storeOutageMs: number;
}

export const DEFAULT_LIMITS: TaskLimits = {
  defaultTtl: 60 * 60 * 1000,
  maxTtl: 7 * 24 * 60 * 60 * 1000,
  minTtl: 1000,
  pollInterval: 1000,
  pageSize: 50,
  maxActiveTasks: 100,
  maxStoredTasks: 1000,
  maxArgumentBytes: 1024 * 1024,
  maxRequestBytes: 2 * 1024 * 1024,
  maxResultBytes: 4 * 1024 * 1024,
  maxAnswerBytes: 64 * 1024,
  maxStepBytes: 256 * 1024,
  maxJournalSteps: 1000,
  maxJournalBytes: 8 * 1024 * 1024,
  maxEventBytes: 64 * 1024,
  maxPendingEvents: 64,
  requestStateMaxAgeMs: 10 * 60 * 1000,
  maxListenTaskIds: 100,
  maxSubscriptions: 1000,
  maxSubscriptionsPerCaller: 32,
  storeOutageMs: DEFAULT_STORE_OUTAGE_MS,
};

/** The size of a value as stored: its JSON text in UTF-8 bytes. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** The ttl actually granted for a requested one (ms, or null/undefined for none). */
export function grantTtl(requested: unknown, limits: TaskLimits): number | null {
  if (typeof requested !== 'number' || !Number.isFinite(requested) || requested < 0) {
    return limits.defaultTtl === null ? null : Math.min(limits.defaultTtl, limits.maxTtl);
  }
  return Math.min(Math.max(Math.floor(requested), limits.minTtl), limits.maxTtl);
}
