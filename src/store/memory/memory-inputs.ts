import { jcsSha256 } from '../../core/digest.js';
import {
  answerMiss,
  awaitsInput,
  decideAnswer,
  decideAsk,
  outstanding,
  overdueQuestion,
  type AnswerDecision,
  type StoredInput,
} from '../../core/input-rules.js';
import { checkJournalPosition } from '../../core/step-value.js';
import { classifyMiss } from '../../core/transition-rules.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import type { AnswerInput, AnswerOutcome, AskInput, AskOutcome, AuditEntry, InputsOutcome, TaskRef } from '../types.js';

/**
 * The input role of the memory store, over the store's own maps. Like every memory operation
 * each function runs to completion without awaiting, so it is atomic by construction.
 */
export interface MemoryInputState {
  readonly tasks: ReadonlyMap<string, TaskRecord>;
  /** taskId → its questions in the order they were asked: the task_inputs table of the SQL stores. */
  readonly questions: Map<string, StoredInput[]>;
  /** Makes the task's open outbox entry due at `now`. */
  dueNow(taskId: string, now: Millis): void;
  audit(line: AuditEntry): void;
}

export function askIn(state: MemoryInputState, input: AskInput): AskOutcome {
  const { authKey, taskId } = input.fence;
  if (input.position !== undefined) checkJournalPosition(input.position);
  const task = state.tasks.get(taskId) ?? null;
  const asked = state.questions.get(taskId) ?? [];
  const keys = input.questions.map((q) => q.key);
  const decision = decideAsk({ task, fence: input.fence, keys, askedKeys: new Set(asked.map((q) => q.key)), now: input.now });
  if (decision === 'APPLY_ASK' && task !== null) {
    for (const q of input.questions) {
      asked.push({
        taskId,
        key: q.key,
        askSeq: input.askSeq,
        request: structuredClone(q.request),
        requestDigest: jcsSha256(q.request),
        askedAt: input.now,
        response: null,
        responseDigest: null,
        answeredAt: null,
        deadlineAt: q.deadlineAt ?? null,
        ...(input.position === undefined ? {} : { position: input.position }),
      });
    }
    state.questions.set(taskId, asked);
    task.status = 'input_required';
    task.version += 1;
    task.lastUpdatedAt = input.now;
  }
  const visible = task !== null && task.authKey === authKey ? task : null;
  const detail = decision === 'APPLY_ASK' ? `ask ${keys.join(',')}` : undefined;
  state.audit(auditLine({ at: input.now, surface: 'input', decision, authKey, taskId, correlationId: input.correlationId, record: visible, detail }));
  return { decision, record: visible === null ? null : structuredClone(visible) };
}

export function answerIn(state: MemoryInputState, input: AnswerInput): AnswerOutcome {
  const { authKey, taskId, now, correlationId } = input;
  const task = state.tasks.get(taskId) ?? null;
  const miss = answerMiss(task, authKey, now);
  if (miss !== null || task === null) {
    const record = miss === 'BLOCK_TERMINAL' ? task : null;
    state.audit(auditLine({ at: now, surface: 'input', decision: miss ?? 'NOT_FOUND', authKey, taskId, correlationId, record }));
    return { decision: miss ?? 'NOT_FOUND', keys: {}, record: null };
  }
  const asked = state.questions.get(taskId) ?? [];
  const keys: Record<string, AnswerDecision> = {};
  for (const [key, response] of Object.entries(input.responses)) {
    const question = asked.find((q) => q.key === key) ?? null;
    const responseDigest = jcsSha256(response ?? null);
    const decision = decideAnswer({ task, auth: authKey, question, responseDigest, now });
    keys[key] = decision;
    if (decision === 'APPLY_ANSWER' && question !== null) {
      question.response = structuredClone(response);
      question.responseDigest = responseDigest;
      question.answeredAt = now;
    }
  }
  const applied = Object.values(keys).includes('APPLY_ANSWER');
  if (applied) {
    task.version += 1;
    task.lastUpdatedAt = now;
    if (outstanding(asked).length === 0) resume(state, task, now);
  }
  // After the write: each line carries the record as the answer left it (the listeners of the
  // SQL stores read the new version from it).
  for (const [key, decision] of Object.entries(keys)) {
    state.audit(auditLine({ at: now, surface: 'input', decision, authKey, taskId, correlationId, record: task, detail: `answer ${key}` }));
  }
  return { decision: applied ? 'APPLY_ANSWER' : 'IGNORE_ANSWER', keys, record: structuredClone(task) };
}

/**
 * Nothing left to ask: the task runs on, as a new first attempt, at once. The lease goes too:
 * the version bump already fenced the asking run off, and a lease left behind would hold the
 * next claim back until it ran out.
 */
function resume(state: MemoryInputState, task: TaskRecord, now: Millis): void {
  task.status = 'working';
  task.attempt = 0;
  task.leaseOwner = null;
  task.leaseExpiresAt = null;
  state.dueNow(task.taskId, now);
}

export function inputsOf(state: MemoryInputState, { authKey, taskId, now }: TaskRef & { now: Millis }): InputsOutcome {
  const miss = classifyMiss(state.tasks.get(taskId) ?? null, authKey, now);
  if (miss !== null) return { decision: miss, inputs: null };
  return { decision: 'FOUND', inputs: structuredClone(inAskOrder(state, taskId)) };
}

/** Ask order, then the order asked within an ask (a stable sort keeps insertion order). */
function inAskOrder(state: MemoryInputState, taskId: string): StoredInput[] {
  return [...(state.questions.get(taskId) ?? [])].sort((a, b) => a.askSeq - b.askSeq);
}

/**
 * The tasks an input deadline ends, most overdue first (then by id, as the SQL stores order
 * them), at most `limit`: the core's `awaitsInput` and `overdueQuestion` on each stored task.
 */
export function overdueIn(state: MemoryInputState, now: Millis, limit: number): Array<{ task: TaskRecord; question: StoredInput }> {
  const due: Array<{ task: TaskRecord; question: StoredInput }> = [];
  for (const task of state.tasks.values()) {
    if (!awaitsInput(task, now)) continue;
    const question = overdueQuestion(inAskOrder(state, task.taskId), now);
    if (question !== null) due.push({ task, question });
  }
  due.sort((a, b) => a.question.deadlineAt! - b.question.deadlineAt! || (a.task.taskId < b.task.taskId ? -1 : a.task.taskId > b.task.taskId ? 1 : 0));
  return due.slice(0, Math.max(0, limit));
}

/** Seeding: each question as it is, replacing a stored one of the same task and key. */
export function seedInputs(state: MemoryInputState, inputs: readonly StoredInput[]): void {
  for (const input of inputs) {
    const asked = state.questions.get(input.taskId) ?? [];
    const at = asked.findIndex((q) => q.key === input.key);
    if (at >= 0) asked[at] = structuredClone(input);
    else asked.push(structuredClone(input));
    state.questions.set(input.taskId, asked);
  }
}
