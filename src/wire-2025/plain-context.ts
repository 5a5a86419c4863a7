import { randomUUID } from 'node:crypto';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { checkAnswer } from '../runtime/requests/answer-task.js';
import { askingContext, type Ask } from '../tools/asking.js';
import { plainStep } from '../tools/plain-step.js';
import type { Principal } from '../tools/principal.js';
import { ProtocolError } from '../tools/protocol-error.js';
import type { ToolContext } from '../tools/tool.js';
import { sendClientRequest } from './client-requests.js';
import type { Extra, SessionContext } from './session.js';

/**
 * A plain 2025-11-25 call asks within the call: one server→client request per key, in order.
 * An answer refused by the request layer's checks (`checkAnswer`: too large, not matching its
 * question's schema) ends the call with invalid params; one that is no answer at all was already
 * refused by the SDK's result schema.
 */
export function sessionAsk(extra: Extra, maxAnswerBytes: number): Ask {
  return async (requests) => {
    const answers: Record<string, unknown> = {};
    for (const [key, request] of Object.entries(requests)) {
      const answer = await sendClientRequest(extra, request, {}, extra.signal);
      const refused = await checkAnswer(key, request, answer, maxAnswerBytes);
      if (refused?.kind === 'refused') throw new ProtocolError(JSON_RPC_CODES.invalidParams, refused.problem);
      answers[key] = answer;
    }
    return answers;
  };
}

/** A plain call's context: it runs within the request, and asks the client within it too. */
export function plainContext(session: SessionContext, principal: Principal, extra: Extra): ToolContext {
  const token = extra._meta?.progressToken;
  const capabilities = (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined) ?? null;
  const idempotencyKey = `call:${randomUUID()}`;
  // Object.assign onto the asking part, not a spread followed by properties (V8's slow path on Node 20).
  return Object.assign(askingContext(sessionAsk(extra, session.server.runtime.limits.maxAnswerBytes), capabilities), {
    taskId: null,
    principal,
    signal: extra.signal,
    idempotencyKey,
    step: plainStep(extra.signal, idempotencyKey),
    clientCapabilities: capabilities,
    reportStatus: async () => undefined,
    checkpoint: async () => extra.signal.throwIfAborted(),
    reportProgress: async (progress, total, message) => {
      if (token === undefined) return;
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) },
      });
    },
  } satisfies Partial<ToolContext>);
}
