import { isAugmented } from '../core/create-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import { callTool as callToolRequest, type CallOutcome } from '../runtime/requests/call-tool.js';
import { taskFollowUp } from '../runtime/task-tools.js';
import { authKeyOf, type Principal } from '../tools/principal.js';
import { invalidParams, methodNotFound, wireTask, WireError } from './encode.js';
import { watchStatus } from './notifications.js';
import { plainContext } from './plain-context.js';
import type { Extra, SessionContext } from './session.js';

/**
 * `tools/call` on this session: the request layer's one call path (`callTool`, `src/runtime/requests/call-tool.ts`), told
 * whether the call asks for a task (`params.task`) and whether the session's client takes
 * tasks at all; the outcome mapped to this generation's messages.
 */
export async function callTool(session: SessionContext, params: Record<string, unknown> & { name: string }, extra: Extra): Promise<unknown> {
  const { runtime } = session.server;
  const principal = await session.server.principalFor(session, extra.authInfo);
  const clientCapabilities = (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined) ?? {};
  const meta = (params._meta as Record<string, unknown> | undefined) ?? {};
  const outcome = await callToolRequest(runtime, {
    principal,
    params,
    // The session's client capabilities go into the stored request, as a 2026-07-28 request
    // carries its own: a worker in any process then knows what the task may ask its requestor.
    stored: Object.assign({}, params, { _meta: { [META_KEYS.clientCapabilities]: clientCapabilities, ...meta } }),
    headerKey: headerValue(extra, 'idempotency-key'),
    traceHeaders: { traceparent: headerValue(extra, 'traceparent'), tracestate: headerValue(extra, 'tracestate') },
    asks: isAugmented({ method: 'tools/call', params }) ? 'requested' : 'none',
    clientTakesTasks: clientCapabilities.tasks !== undefined,
    context: () => plainContext(session, principal, extra),
    plainContext: true,
  });
  return answerCall(session, outcome, principal, extra);
}

/** A call's outcome as this generation answers it. */
function answerCall(session: SessionContext, outcome: CallOutcome, principal: Principal, extra: Extra): unknown {
  switch (outcome.kind) {
    case 'invalid':
      throw invalidParams(outcome.message);
    case 'result':
      return outcome.result;
    case 'input':
      // A session call asks its client within the call (`sessionAsk`); nothing here asks by rounds.
      throw outcome.needed;
    case 'refused':
      throw refusalError(outcome);
    case 'task': {
      const { record } = outcome;
      if (outcome.followUp) return taskFollowUp(record);
      if (outcome.decision === 'ACCEPT_TASK') {
        const token = extra._meta?.progressToken;
        if (token !== undefined) session.progressTokens.set(record.taskId, token);
        watchStatus(session, record.taskId, authKeyOf(principal), record.version);
      }
      return { task: wireTask(record) };
    }
  }
}

/** A refused call's JSON-RPC error on this generation: a task asked wrongly is method not found, as the 2025-11-25 spec says. */
function refusalError(outcome: Extract<CallOutcome, { kind: 'refused' }>): WireError {
  switch (outcome.decision) {
    case 'BLOCK_TASK_FORBIDDEN':
      return methodNotFound(outcome.message);
    case 'BLOCK_TASK_REQUIRED':
      return methodNotFound(`${outcome.message} (params.task)`);
    case 'BLOCK_IDEMPOTENCY_COLLISION':
      return invalidParams(outcome.message);
    case 'BLOCK_TASK_LIMIT':
    case 'BLOCK_STORED_LIMIT':
      return new WireError(JSON_RPC_CODES.tooManyTasks, outcome.message);
  }
}

function headerValue(extra: Extra, name: string): string | null {
  const value = extra.requestInfo?.headers[name];
  if (Array.isArray(value)) return value[0] ?? null;
  return typeof value === 'string' ? value : null;
}
