import { jcsSha256 } from '../core/digest.js';
import type { InputRequest, StoredInput } from '../core/input-rules.js';
import { parseTimestamp } from '../core/time.js';
import type { Millis } from '../core/types.js';
import type { TaskStore } from '../store/types.js';
import type { InputCase, StoredInputPacket } from './fixture.js';
import { toRecord } from './to-record.js';

/**
 * An input case through the store's `ask` and `answer`, which decide it (`decideAsk`,
 * `decideAnswer` in the store's own transaction; the service's methods of the same names add
 * only a deadline, the change publication and the audit event around them): the task and its
 * questions are seeded under the case's namespace, then the ask or the answer is made on the
 * packet's `now`. An ask's fence is the packet's auth key, task id, expected version and owner;
 * an answer's decision is the decision for its key, or the task's when it is out of reach.
 */
export async function performInput(replayCase: InputCase, store: TaskStore, ns: string): Promise<string> {
  const p = replayCase.packet;
  const now = parseTimestamp(p.now);
  const authKey = ns + p.auth;
  const taskId = ns + (p.task?.taskId ?? 'absent');
  const inputs = p.inputs.map((q) => toInput(q, taskId, now));
  if (p.task !== null) await store.seed([toRecord(p.task, ns)], inputs);
  const correlationId = `${ns}${p.op}`;
  if (p.op === 'ask' && p.ask !== undefined) {
    const fence = { taskId, authKey, version: p.ask.expectedVersion, owner: p.ask.owner };
    // The next ask of the run: after every ask the seeded questions came from.
    const askSeq = Math.max(-1, ...inputs.map((q) => q.askSeq)) + 1;
    const questions = p.ask.keys.map((key) => ({ key, request: { method: 'elicitation/create', params: { message: key } } }));
    return (await store.ask({ fence, askSeq, questions, now, correlationId })).decision;
  }
  if (p.op === 'answer' && p.answer !== undefined) {
    const { key, response } = p.answer;
    const outcome = await store.answer({ authKey, taskId, responses: Object.fromEntries([[key, response ?? null]]), now, correlationId });
    return outcome.keys[key] ?? outcome.decision;
  }
  // The fixture parser requires the member the op names.
  throw new Error(`input case without its ${p.op} member`);
}

/** A packet's stored question as the store keeps it; an answered one was answered at `now`. */
function toInput(packet: StoredInputPacket, taskId: string, now: Millis): StoredInput {
  const { method, params } = packet.request;
  const request: InputRequest = params === undefined ? { method } : { method, params };
  const answered = 'response' in packet;
  const response = answered ? (packet.response ?? null) : null;
  return {
    taskId,
    key: packet.key,
    askSeq: packet.askSeq ?? 0,
    request,
    requestDigest: jcsSha256(request),
    askedAt: now,
    response,
    responseDigest: answered ? jcsSha256(response) : null,
    answeredAt: answered ? now : null,
    // Fixtures carry no deadlines: the deadline pass is an upkeep operation, not a decision the fixtures cover.
    deadlineAt: null,
  };
}
