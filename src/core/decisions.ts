/** Every decision the guard can return, by surface. String unions, not enums. */

export const CREATE_DECISIONS = [
  'BLOCK_CAPABILITY',
  'BLOCK_TASK_FORBIDDEN',
  'BLOCK_TASK_REQUIRED',
  'ACCEPT_NORMAL',
  'REPLAY_TASK',
  'BLOCK_IDEMPOTENCY_COLLISION',
  'ACCEPT_TASK',
] as const;
export type CreateDecision = (typeof CREATE_DECISIONS)[number];

export const TRANSITION_DECISIONS = [
  'NOT_FOUND',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
  'BLOCK_ILLEGAL_TRANSITION',
  'IDEMPOTENT_TERMINAL',
  'BLOCK_TERMINAL_REWRITE',
  'BLOCK_STALE_VERSION',
  'APPLY_TRANSITION',
] as const;
export type TransitionDecision = (typeof TRANSITION_DECISIONS)[number];

export const READ_DECISIONS = [
  'BLOCK_CAPABILITY',
  'NOT_FOUND',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
  'RETURN_STATUS',
  'WAIT_TERMINAL',
  'WAIT_INPUT',
  'RETURN_RESULT',
  'ALREADY_TERMINAL',
  'CANCEL_TASK',
] as const;
export type ReadDecision = (typeof READ_DECISIONS)[number];

export const LIST_DECISIONS = ['BLOCK_CAPABILITY', 'LIST_FILTERED'] as const;
export type ListDecision = (typeof LIST_DECISIONS)[number];

/**
 * tasklatch's own admission decision beyond the contract: the caller already has as many
 * non-terminal tasks as the configured limit allows. Never produced without a limit.
 */
export const LIMIT_DECISION = 'BLOCK_TASK_LIMIT';
/**
 * tasklatch's own admission decision beyond the contract: the caller already holds as many
 * unexpired tasks, finished ones included, as the configured bound allows (finished tasks keep
 * their request and result until they expire). Never produced without a bound.
 */
export const STORED_LIMIT_DECISION = 'BLOCK_STORED_LIMIT';
export type LimitDecision = typeof LIMIT_DECISION | typeof STORED_LIMIT_DECISION;

/**
 * tasklatch's own dispatch decision: a worker gave its lease back (draining) so that another may
 * claim the task at once. The version stays (the next claim bumps it); the line is in the audit
 * trail so that operators see the hand-over and other processes can be told of it.
 */
export const RELEASE_DECISION = 'RELEASE_LEASE';
export type ReleaseDecision = typeof RELEASE_DECISION;

/** The input surface's ask, in the precedence of `decideAsk` (`src/core/input-rules.ts`). */
export const ASK_DECISIONS = [
  'NOT_FOUND',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
  'BLOCK_TERMINAL_REWRITE',
  'BLOCK_STALE_VERSION',
  'BLOCK_INPUT_KEY_REUSED',
  'APPLY_ASK',
] as const;
export type AskDecision = (typeof ASK_DECISIONS)[number];

/** The input surface's answer to one key, in the precedence of `decideAnswer` (`src/core/input-rules.ts`). */
export const ANSWER_DECISIONS = [
  'NOT_FOUND',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
  'BLOCK_TERMINAL',
  'IGNORE_UNKNOWN_KEY',
  'IDEMPOTENT_ANSWER',
  'BLOCK_ANSWER_REWRITE',
  'APPLY_ANSWER',
] as const;
export type AnswerDecision = (typeof ANSWER_DECISIONS)[number];

/** The input surface's decisions, and the answer write's summary (`IGNORE_ANSWER`: no key changed anything). */
export type InputDecision = AskDecision | AnswerDecision | 'IGNORE_ANSWER';

/**
 * The step surface (`src/core/step-rules.ts`): a run records one step of its journal with one
 * fenced write. In precedence order, as `decideStepRecord` applies them.
 */
export const STEP_DECISIONS = [
  'NOT_FOUND',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
  'BLOCK_TERMINAL_REWRITE',
  'BLOCK_STALE_VERSION',
  'BLOCK_STEP_ORDER',
  'BLOCK_STEP_SIZE',
  'BLOCK_JOURNAL_LIMIT',
  'APPLY_STEP',
] as const;
export type StepDecision = (typeof STEP_DECISIONS)[number];

/** The step surface's park (`src/core/park-rules.ts`): a run whose handler disagrees with its journal leaves its task working. */
export const PARK_DECISIONS = ['NOT_FOUND', 'BLOCK_AUTH', 'BLOCK_EXPIRED', 'BLOCK_TERMINAL_REWRITE', 'BLOCK_STALE_VERSION', 'APPLY_PARK'] as const;
export type ParkDecision = (typeof PARK_DECISIONS)[number];

/**
 * The event surface's send (`decideSendEvent`, `src/core/event-rules.ts`): an event stored for a
 * task (and its wait woken), or refused. A sender sees `BLOCK_AUTH` as `NOT_FOUND`.
 */
export const EVENT_DECISIONS = [
  'NOT_FOUND',
  'BLOCK_AUTH',
  'BLOCK_EXPIRED',
  'BLOCK_TERMINAL_REWRITE',
  'BLOCK_EVENT_SIZE',
  'BLOCK_EVENT_LIMIT',
  'APPLY_EVENT',
] as const;
export type EventDecision = (typeof EVENT_DECISIONS)[number];

export type Decision =
  | CreateDecision
  | TransitionDecision
  | ReadDecision
  | ListDecision
  | LimitDecision
  | ReleaseDecision
  | InputDecision
  | StepDecision
  | ParkDecision
  | EventDecision;

/** The three ways a record can be invisible to a caller; on the wire they look the same. */
export type MissDecision = 'NOT_FOUND' | 'BLOCK_AUTH' | 'BLOCK_EXPIRED';

export const SURFACES = ['create', 'transition', 'read', 'list', 'input', 'step', 'event'] as const;
export type Surface = (typeof SURFACES)[number];
