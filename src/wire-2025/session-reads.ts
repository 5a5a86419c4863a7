import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import type { Logger } from '../runtime/log.js';
import type { TaskCapabilities } from '../core/types.js';
import { SESSION_READS, type ReadCall, type SessionReadMethod } from './methods.js';
import { requestFailure } from './server.js';
import type { SessionContext } from './session.js';
import { mediaTypeProblem } from './session-limits.js';

/**
 * A read of an established session (`tasks/get`, and `tasks/cancel` and `tasks/list` where the
 * runtime declares them) in the plain shape an SDK client sends: `params` is exactly
 * `{ taskId }`, or for `tasks/list` nothing or `{ cursor }`.
 */
export interface SessionRead {
  id: string | number;
  method: SessionReadMethod;
  params: { taskId: string } | { cursor?: string } | undefined;
}

const ENVELOPE = new Set(['jsonrpc', 'id', 'method', 'params']);
const VERSIONS: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS);

/**
 * The read a POST of an established session carries, when the SDK transport and `Server` would
 * take it as it is and run its handler (a function of `SESSION_READS`) on it: the transport's
 * Accept, Content-Type and `MCP-Protocol-Version` checks pass, the body is one JSON-RPC request
 * its schemas accept, with nothing in it those schemas would drop or that the SDK acts on
 * (`_meta`: progress tokens, related tasks). null for anything else, which goes to the SDK
 * transport: every refusal and every other method keeps the SDK's own answer.
 */
export function plainRead(httpMethod: string | undefined, headers: IncomingHttpHeaders, body: unknown, capabilities: TaskCapabilities): SessionRead | null {
  if (httpMethod !== 'POST' || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const m = body as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return null;
  for (const key of Object.keys(m)) if (!ENVELOPE.has(key)) return null;
  const id = m.id;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id))) return null;
  const params = readParams(m.method, m.params, capabilities);
  if (params === null) return null;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && !(typeof version === 'string' && VERSIONS.has(version))) return null;
  if (mediaTypeProblem(headers) !== null) return null;
  return { id, method: m.method as SessionReadMethod, params };
}

/** The params of a plain read, or null when the method is not one or its params are not plain. */
function readParams(method: unknown, params: unknown, capabilities: TaskCapabilities): SessionRead['params'] | null {
  if (method === 'tasks/get' || (method === 'tasks/cancel' && capabilities.cancel !== undefined)) {
    if (!isPlainObject(params)) return null;
    const keys = Object.keys(params);
    return keys.length === 1 && keys[0] === 'taskId' && typeof params.taskId === 'string' ? { taskId: params.taskId } : null;
  }
  if (method === 'tasks/list' && capabilities.list !== undefined) {
    if (params === undefined) return undefined;
    if (!isPlainObject(params)) return null;
    const keys = Object.keys(params);
    if (keys.length === 0) return {};
    return keys.length === 1 && keys[0] === 'cursor' && typeof params.cursor === 'string' ? { cursor: params.cursor } : null;
  }
  return null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The session's answer to a plain read: the same handler the SDK `Server` runs, its result or
 * failure made into the JSON-RPC response exactly as the SDK's protocol layer makes it (the
 * same members in the same order), so the bytes match the SDK path's.
 */
export async function answerRead(session: SessionContext, read: SessionRead, call: ReadCall, sessionId: string): Promise<JSONRPCMessage> {
  try {
    const answer = SESSION_READS[read.method] as (session: SessionContext, params: SessionRead['params'], call: ReadCall) => Promise<unknown>;
    const result = (await answer(session, read.params, call)) as Record<string, unknown>;
    return { result, jsonrpc: '2.0', id: read.id };
  } catch (error) {
    const failure = requestFailure(error, read.method, session.server.logger, { requestId: read.id, sessionId });
    const code = Number.isSafeInteger(failure.code) ? failure.code : JSON_RPC_CODES.internalError;
    const data = (failure as { data?: unknown }).data;
    return { jsonrpc: '2.0', id: read.id, error: { code, message: failure.message ?? 'Internal error', ...(data === undefined ? {} : { data }) } };
  }
}

/**
 * The SDK transport's reply to a request, as it reaches the client when the answer is ready by
 * the time the response is written: its SSE headers (names as the transport's `Headers` list
 * them, in that order), then one `message` event. Written at once, head and body: one socket
 * write. `message` null: the session closed while the request was served, and the stream ends
 * without an event, as the transport's does.
 */
export function sendEvent(res: ServerResponse, sessionId: string, message: JSONRPCMessage | null): void {
  const text = message === null ? '' : `event: message\ndata: ${JSON.stringify(message)}\n\n`;
  res
    .writeHead(200, {
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'content-type': 'text/event-stream',
      'mcp-session-id': sessionId,
      'x-accel-buffering': 'no',
      'content-length': Buffer.byteLength(text),
    })
    .end(text);
}

/**
 * One log line for a request refused inside its session (a JSON-RPC error in a 200 answer, where
 * the HTTP layer sees only the status). An internal error is logged, with its stack, where it arises.
 */
export function logRefused(logger: Logger, message: JSONRPCMessage, sessionId: string | undefined): void {
  if (!('error' in message) || message.error.code === JSON_RPC_CODES.internalError) return;
  const { code, message: reason } = message.error;
  logger.info({ status: 200, code, reason: reason.slice(0, 300), id: message.id, sessionId }, 'request refused');
}
