import { outstanding, type InputRequest } from '../../core/input-rules.js';
import type { TaskRecord } from '../../core/types.js';
import { rideThrough } from '../../service/ride-through.js';
import type { RequestHost } from './host.js';
import { couldBeTask } from './task-id.js';
import { requestSpan, traced } from '../../trace/request-span.js';

export interface GetTaskRequest {
  auth: string;
  taskId: string;
  /**
   * Whether the answer carries an `input_required` task's outstanding questions (the 2026-07-28
   * `tasks/get` inlines them; a 2025-11-25 requestor gets them on its `tasks/result` stream).
   */
  withQuestions?: boolean;
  /**
   * Fires when the requestor goes away: a store outage is then no longer waited out. Read only
   * while the questions of an `input_required` task are looked up (`ReadOfCaller` makes it then).
   */
  signal?: AbortSignal;
}

/**
 * A `tasks/get` whose signal is its caller's, read when the read needs it: the wires make a
 * request's signal on first use (an `AbortController` each), and a poll of a working task never
 * looks at it. A class: an object literal with a getter makes a hidden class of its own per request.
 */
export class ReadOfCaller implements GetTaskRequest {
  constructor(
    readonly auth: string,
    readonly taskId: string,
    readonly withQuestions: boolean,
    private readonly caller: { readonly signal: AbortSignal },
  ) {}

  get signal(): AbortSignal {
    return this.caller.signal;
  }
}

/**
 * What a `tasks/get` came to: the caller's task (with its outstanding questions, keyed, when
 * asked for and the task waits for input), or not found (unknown, another caller's, expired or
 * implausible alike: an id reveals nothing).
 */
export type GetTaskOutcome = { kind: 'task'; record: TaskRecord; questions: Record<string, InputRequest> | null } | { kind: 'not-found' };

/** How many times the record is read again when its questions were all answered between the two reads. */
const QUESTION_READS = 3;

/**
 * `tasks/get`: the caller's record, read through a store outage shorter than
 * `limits.storeOutageMs` (past it the store's error is thrown, which each wire answers as the
 * retryable `Store unavailable`); the read decision is audited by the guard.
 */
export function getTask(host: Pick<RequestHost, 'guard'>, request: GetTaskRequest): Promise<GetTaskOutcome> {
  return traced(requestSpan('tasks/get', undefined, request.taskId), undefined, readTask, host, request);
}

async function readTask(host: Pick<RequestHost, 'guard'>, request: GetTaskRequest): Promise<GetTaskOutcome> {
  const { auth, taskId } = request;
  if (!couldBeTask(taskId)) return { kind: 'not-found' };
  const { requestor, answers, context } = host.guard;
  const bound = context.limits.storeOutageMs;
  // Bounded: a record seeded input_required without questions stays so, and is shown so.
  for (let attempt = 1; ; attempt += 1) {
    const out = await rideThrough(() => requestor.read({ auth, method: 'tasks/get', taskId }), bound);
    if (out.record === null) return { kind: 'not-found' };
    if (request.withQuestions !== true || out.record.status !== 'input_required') return { kind: 'task', record: out.record, questions: null };
    // Every outstanding question, as the extension asks: a partial answer leaves the rest.
    const asked = outstanding(await rideThrough(() => answers.lookupInputs({ auth, taskId }), bound, request.signal));
    // None left: the last answer landed between the two reads and the task moved on (the
    // answer and the status change are one write); the record read again says to what.
    if (asked.length === 0 && attempt < QUESTION_READS) continue;
    return { kind: 'task', record: out.record, questions: Object.fromEntries(asked.map((q) => [q.key, q.request])) };
  }
}
