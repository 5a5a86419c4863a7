import { outstanding, type InputRequest } from '../../core/input-rules.js';
import { isAnswerTo } from '../../tools/asking.js';
import type { RequestHost } from './host.js';
import { couldBeTask } from './task-id.js';
import { requestSpan, traced } from '../../trace/request-span.js';

/**
 * Why one answer to one question is refused, or null: `not-an-answer` when it is not the kind of
 * result its question asks for (an elicitation's `action`, a sampling message, a roots list);
 * `refused` when it is larger than `limits.maxAnswerBytes` or an accepted elicitation whose
 * content does not match the question's `requestedSchema` (`problem` names the key).
 */
export type AnswerCheck = { kind: 'not-an-answer'; key: string; method: string } | { kind: 'refused'; key: string; problem: string } | null;

/**
 * The checks every answer passes, whichever wire or round brought it (see `AnswerCheck`). The
 * schema validator is loaded on the first answer: the root entry does not load it.
 */
export async function checkAnswer(key: string, request: InputRequest, answer: unknown, maxBytes: number): Promise<AnswerCheck> {
  if (!isAnswerTo(request, answer)) return { kind: 'not-an-answer', key, method: request.method };
  const { answerProblem } = await import('../../service/answer-check.js');
  const problem = answerProblem(key, request, answer, maxBytes);
  return problem === null ? null : { kind: 'refused', key, problem };
}

export interface AnswerTaskRequest {
  auth: string;
  taskId: string;
  /** Answers by question key. */
  responses: Readonly<Record<string, unknown>>;
  /** The method that carried them, for the audit line of a miss (`tasks/update`, `tasks/result`). */
  via: string;
}

/**
 * What answers to a task's questions came to:
 * - `answered`: the answers to outstanding questions are stored (`keys`; none when every key was
 *   unknown, already answered or of a task that moved on: such keys are ignored, as the 2026-07-28
 *   extension asks).
 * - `not-found`: unknown, another caller's, expired or implausible alike; the miss is audited.
 * - a refused answer (`AnswerCheck`): nothing is stored, not even the other answers.
 */
export type AnswerTaskOutcome = { kind: 'answered'; keys: string[] } | { kind: 'not-found' } | NonNullable<AnswerCheck>;

/**
 * Answers to a task's questions (the 2026-07-28 `tasks/update`; the 2025-11-25 responses to the
 * questions sent on a `tasks/result` stream). Every answer is checked before any is stored, and
 * they are stored in one write, before this resolves: the next `tasks/get` shows what is left.
 * Only the task's own caller can answer it; the first accepted answer to a key wins.
 */
export function answerTask(host: Pick<RequestHost, 'guard'>, request: AnswerTaskRequest): Promise<AnswerTaskOutcome> {
  return traced(requestSpan('tasks/update', undefined, request.taskId), undefined, storeAnswers, host, request);
}

async function storeAnswers(host: Pick<RequestHost, 'guard'>, request: AnswerTaskRequest): Promise<AnswerTaskOutcome> {
  const { auth, taskId } = request;
  if (!couldBeTask(taskId)) return { kind: 'not-found' };
  const { answers, requestor, context } = host.guard;
  const found = await answers.inputs({ auth, taskId });
  if (found.inputs === null) {
    // A miss, audited as a read's is: unknown, another caller's or expired, told apart here only.
    await requestor.recordDecision({ surface: 'input', decision: found.decision, auth, taskId, detail: request.via, read: true });
    return { kind: 'not-found' };
  }
  const pending = new Map(outstanding(found.inputs).map((q) => [q.key, q]));
  const responses: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [key, response] of Object.entries(request.responses)) {
    const question = pending.get(key);
    if (question === undefined) continue;
    const refused = await checkAnswer(key, question.request, response, context.limits.maxAnswerBytes);
    if (refused !== null) return refused;
    responses[key] = response;
  }
  const keys = Object.keys(responses);
  if (keys.length > 0) await answers.answer({ auth, taskId, responses });
  return { kind: 'answered', keys };
}
