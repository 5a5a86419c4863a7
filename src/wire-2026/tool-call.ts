import type { IncomingHttpHeaders } from 'node:http';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { callTool as callToolRequest, type CallOutcome } from '../runtime/requests/call-tool.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import { taskFollowUp } from '../runtime/task-tools.js';
import { authKeyOf } from '../tools/principal.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { createTaskResult } from '../tools/task-views.js';
import { CallToolParams, describeIssue } from './messages.js';
import { plainContext, type Call } from './plain-context.js';
import { plainToolCall, type PlainToolCall } from './plain-request.js';
import { declaresTasks, invalidParams, missingTasksExtension } from './protocol.js';
import { signRoundState, verifyRoundState } from './request-state.js';

/**
 * `tools/call`: the request layer's one call path (`callTool`, `src/runtime/requests/call-tool.ts`). The server decides
 * whether a call becomes a task (`decideCallMode`): never without the extension in this
 * request (a `required` tool then answers missing capability), never for a `forbidden` tool, always for a
 * `required` one, and for an `optional` one unless the tool prefers a plain answer for these
 * arguments. A legacy `params.task` changes nothing, and is not stored.
 */
export async function callTool(runtime: TaskRuntime, call: Call): Promise<Record<string, unknown>> {
  const { name, arguments: given } = plainToolCall(call.params) ?? parsedToolCall(call.params);
  const args = given ?? {};
  const declared = declaresTasks(call.capabilities);
  // Multi-round trips: the answers so far come back signed in requestState, the new ones in
  // inputResponses; the call runs again from the start with all of them.
  const bound = { auth: authKeyOf(call.principal), tool: name, args };
  let secret: Uint8Array | undefined;
  const context = async () => {
    secret = await runtime.sharedSecret();
    const earlier =
      call.params.requestState === undefined
        ? {}
        : verifyRoundState(secret, bound, call.params.requestState, { now: runtime.now(), maxAgeMs: runtime.limits.requestStateMaxAgeMs }).answers;
    const given = call.params.inputResponses;
    const answers = { ...earlier, ...(typeof given === 'object' && given !== null && !Array.isArray(given) ? (given as Record<string, unknown>) : {}) };
    return plainContext(call, answers, runtime.limits.maxAnswerBytes);
  };
  // The rounds' own members are not part of the task's request (nor of its digest).
  const { task: _legacy, inputResponses: _responses, requestState: _state, ...stored } = call.params;
  const outcome = await callToolRequest(runtime, {
    principal: call.principal,
    params: call.params,
    stored,
    headerKey: headerValue(call.headers, 'idempotency-key'),
    traceHeaders: { traceparent: headerValue(call.headers, 'traceparent'), tracestate: headerValue(call.headers, 'tracestate') },
    asks: declared ? 'accepted' : 'none',
    clientTakesTasks: declared,
    context,
    // Without a round state to verify, making the context checks nothing about the call.
    plainContext: call.params.requestState === undefined,
  });
  switch (outcome.kind) {
    case 'invalid':
      throw invalidParams(outcome.message);
    case 'result':
      // Object.assign, not a spread followed by properties (V8's slow path on Node 20).
      return Object.assign({}, outcome.result, { resultType: 'complete' });
    case 'input':
      return {
        resultType: 'input_required',
        inputRequests: outcome.needed.requests,
        requestState: signRoundState(secret!, bound, { answers: outcome.needed.answered }, runtime.now()),
      };
    case 'task':
      // Only now, after the record and its outbox entry committed: a tasks/get resolves.
      return outcome.followUp ? Object.assign({}, taskFollowUp(outcome.record), { resultType: 'complete' }) : createTaskResult(outcome.record);
    case 'refused':
      throw refusalError(outcome);
  }
}

/** The params the hand-written check did not recognise, judged (and the error worded) by the schema. */
function parsedToolCall(params: Record<string, unknown>): PlainToolCall {
  const parsed = CallToolParams.safeParse(params);
  if (!parsed.success) throw invalidParams(`Invalid params for tools/call: ${describeIssue(parsed.error)}`);
  return { name: parsed.data.name, arguments: parsed.data.arguments };
}

/** A refused call's JSON-RPC error on this generation: a `required` tool without the extension is missing capability. */
function refusalError(outcome: Extract<CallOutcome, { kind: 'refused' }>): ProtocolError {
  switch (outcome.decision) {
    case 'BLOCK_TASK_REQUIRED':
      return missingTasksExtension(`Tool ${outcome.tool}`);
    case 'BLOCK_IDEMPOTENCY_COLLISION':
      return invalidParams(outcome.message);
    case 'BLOCK_TASK_LIMIT':
    case 'BLOCK_STORED_LIMIT':
      return new ProtocolError(JSON_RPC_CODES.tooManyTasks, outcome.message);
    case 'BLOCK_TASK_FORBIDDEN':
      // The server chooses here: a `forbidden` tool runs plainly, never refused as a task.
      return new ProtocolError(JSON_RPC_CODES.internalError, `tools/call answered ${outcome.decision}`);
  }
}

/** The first value of a request header, or null. */
function headerValue(headers: IncomingHttpHeaders, name: string): string | null {
  const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
  return (Array.isArray(value) ? value[0] : value) ?? null;
}
