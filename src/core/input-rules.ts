import type { MissDecision } from './decisions.js';
import { holdsFence } from './dispatch-rules.js';
import { formatTimestamp, isExpired } from './time.js';
import { isTerminal, type Fence, type Millis, type TaskRecord } from './types.js';

/**
 * The input surface: a running task asks its requestor something (an MCP input request:
 * `elicitation/create`, `sampling/createMessage`, `roots/list`) and waits, durably, for the
 * answer; the requestor answers through any instance.
 *
 * - **question**: one input request of a task, under a key unique for the task's lifetime.
 * - **ask**: the questions one call of the handler asks together (`askSeq` numbers the calls of
 *   one run, so that a run started again finds its earlier questions and their answers).
 */

/** An MCP input request, as the requestor receives it. */
export interface InputRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** A stored question and, once given, its answer. */
export interface StoredInput {
  taskId: string;
  key: string;
  askSeq: number;
  /**
   * The ask's place in its task's journal order (steps, sleeps and asks share one counter per
   * run, see step-rules.ts); absent for an ask that did not say.
   */
  position?: number;
  request: InputRequest;
  requestDigest: string;
  askedAt: Millis;
  /** The accepted answer, or null while the question is outstanding. */
  response: unknown;
  responseDigest: string | null;
  answeredAt: Millis | null;
  /** Past this instant an outstanding question ends its task failed (null: it may wait until the task expires). */
  deadlineAt: Millis | null;
}

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

/** The part of a record the input rules read. */
export type AskedRecord = Pick<TaskRecord, 'taskId' | 'authKey' | 'status' | 'version' | 'expiresAt' | 'leaseOwner'>;

/**
 * Ask, in its precedence: the task must exist for the asker's auth key, be unexpired and not
 * terminal, still be held by the asking run (its fence) and `working`; every key must be new for
 * the task's lifetime. Only `APPLY_ASK` writes: the questions are stored and the task becomes
 * `input_required` (version + 1) in one conditional write.
 */
export function decideAsk(input: {
  task: AskedRecord | null;
  fence: Fence;
  keys: readonly string[];
  askedKeys: ReadonlySet<string>;
  now: Millis;
}): AskDecision {
  const { task, fence, now } = input;
  if (task === null) return 'NOT_FOUND';
  if (task.authKey !== fence.authKey) return 'BLOCK_AUTH';
  if (isExpired(task, now)) return 'BLOCK_EXPIRED';
  if (isTerminal(task.status)) return 'BLOCK_TERMINAL_REWRITE';
  if (task.status !== 'working' || !holdsFence(task, fence, now)) return 'BLOCK_STALE_VERSION';
  const seen = new Set<string>();
  for (const key of input.keys) {
    if (input.askedKeys.has(key) || seen.has(key)) return 'BLOCK_INPUT_KEY_REUSED';
    seen.add(key);
  }
  return 'APPLY_ASK';
}

/**
 * One answer to one key, in its precedence: the task must exist for the answerer's auth key,
 * be unexpired and not terminal (an answer after cancel or after the end changes nothing); a key
 * never asked is ignored; a key already answered takes the same answer again (idempotent) and
 * refuses a different one. Only `APPLY_ANSWER` writes.
 */
export function decideAnswer(input: {
  task: Pick<TaskRecord, 'authKey' | 'status' | 'expiresAt'> | null;
  auth: string;
  question: Pick<StoredInput, 'responseDigest' | 'answeredAt'> | null;
  responseDigest: string;
  now: Millis;
}): AnswerDecision {
  const { task, question } = input;
  const miss = answerMiss(task, input.auth, input.now);
  if (miss !== null) return miss;
  if (question === null) return 'IGNORE_UNKNOWN_KEY';
  if (question.answeredAt !== null) return question.responseDigest === input.responseDigest ? 'IDEMPOTENT_ANSWER' : 'BLOCK_ANSWER_REWRITE';
  return 'APPLY_ANSWER';
}

/** Answer rules 1–4, which do not depend on the key. */
export function answerMiss(
  task: Pick<TaskRecord, 'authKey' | 'status' | 'expiresAt'> | null,
  auth: string,
  now: Millis,
): MissDecision | 'BLOCK_TERMINAL' | null {
  if (task === null) return 'NOT_FOUND';
  if (task.authKey !== auth) return 'BLOCK_AUTH';
  if (isExpired(task, now)) return 'BLOCK_EXPIRED';
  if (isTerminal(task.status)) return 'BLOCK_TERMINAL';
  return null;
}

/** The questions still waiting for an answer, in ask order. */
export function outstanding(inputs: readonly StoredInput[]): StoredInput[] {
  return inputs.filter((q) => q.answeredAt === null);
}

/**
 * The question that ends its task: among the outstanding ones whose deadline has passed
 * (`deadlineAt <= now`, as expiry reads `expiresAt`), the one due first, ask order breaking ties
 * (`inputs` in ask order). Null when none is overdue.
 */
export function overdueQuestion(inputs: readonly StoredInput[], now: Millis): StoredInput | null {
  let first: StoredInput | null = null;
  for (const q of outstanding(inputs)) {
    if (q.deadlineAt === null || q.deadlineAt > now) continue;
    if (first === null || q.deadlineAt < first.deadlineAt!) first = q;
  }
  return first;
}

/**
 * Whether the deadline rule reaches a task at all: one waiting for input and unexpired. A task
 * that was answered in time, cancelled or finished meanwhile is no longer waiting.
 */
export function awaitsInput(task: Pick<TaskRecord, 'status' | 'expiresAt'>, now: Millis): boolean {
  return task.status === 'input_required' && !isExpired(task, now);
}

/**
 * The stored outcome of a task whose question went unanswered: a JSON-RPC error, so that both
 * protocol generations read the task as `failed`.
 */
export function deadlineOutcome(question: Pick<StoredInput, 'key' | 'deadlineAt'>): { error: { code: number; message: string } } {
  const at = question.deadlineAt === null ? 'none' : formatTimestamp(question.deadlineAt);
  return { error: { code: -32603, message: `no answer to input request ${JSON.stringify(question.key)} before its deadline (${at})` } };
}

/** The audit detail of a task ended by a deadline. */
export function deadlineDetail(key: string): string {
  return `input deadline ${key}`;
}
