import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { InputRequest } from '../core/input-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { checkAnswer } from '../runtime/requests/answer-task.js';
import { askingContext, InputNeeded, type Ask } from '../tools/asking.js';
import type { Principal } from '../tools/principal.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { plainStep } from '../tools/plain-step.js';
import type { ToolContext } from '../tools/tool.js';

/** What a method handler is given: the request's own parts, already checked. */
export interface Call {
  id: string | number;
  params: Record<string, unknown>;
  capabilities: Record<string, unknown>;
  principal: Principal;
  headers: IncomingHttpHeaders;
  signal: AbortSignal;
}

/**
 * A plain call's context: what it asks is answered from the call's rounds (MRTR); a question
 * without a well-formed answer yet ends this round with `input_required`; an answer over
 * `maxAnswerBytes` or not matching its question's schema ends the call with invalid params.
 */
export function plainContext(call: Call, answers: Record<string, unknown>, maxAnswerBytes: number): ToolContext {
  const used: Record<string, unknown> = {};
  const ask: Ask = async (requests) => {
    const missing: Record<string, InputRequest> = {};
    const got: Record<string, unknown> = {};
    for (const [key, request] of Object.entries(requests)) {
      const answer = Object.hasOwn(answers, key) ? answers[key] : undefined;
      const refused = await checkAnswer(key, request, answer, maxAnswerBytes);
      // No answer of the kind asked (none at all, or another kind): asked again in the next round.
      if (refused?.kind === 'not-an-answer') {
        missing[key] = request;
        continue;
      }
      if (refused?.kind === 'refused') throw new ProtocolError(JSON_RPC_CODES.invalidParams, `Invalid inputResponses: ${refused.problem}`);
      got[key] = answer;
    }
    if (Object.keys(missing).length > 0) throw new InputNeeded(missing, { ...used, ...got });
    Object.assign(used, got);
    return got;
  };
  const idempotencyKey = `call:${randomUUID()}`;
  // Object.assign onto the asking part, not a spread followed by properties (V8's slow path on Node 20).
  return Object.assign(askingContext(ask, call.capabilities), {
    taskId: null,
    principal: call.principal,
    signal: call.signal,
    idempotencyKey,
    step: plainStep(call.signal, idempotencyKey),
    clientCapabilities: call.capabilities,
    reportStatus: async () => undefined,
    reportProgress: async () => undefined,
    checkpoint: async () => call.signal.throwIfAborted(),
  } satisfies Partial<ToolContext>);
}
