import { ProtocolError } from '../tools/protocol-error.js';

/**
 * The MCP 2026-07-28 core as this wire speaks it: stateless requests, each carrying its own
 * protocol version and client capabilities in `_meta`, and the tasks extension on top.
 */
export const PROTOCOL_VERSION = '2026-07-28';
export const SUPPORTED_VERSIONS = [PROTOCOL_VERSION] as const;

export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The tasks extension's identifier, in client capabilities and in `server/discover`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** JSON-RPC codes of this generation (the only ones it emits in -32020…-32099). */
export const CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  headerMismatch: -32020,
  missingCapability: -32021,
  unsupportedVersion: -32022,
  /** tasklatch's own: the active-task limit (outside the reserved range). */
  tooManyTasks: -32000,
  /** tasklatch's own: the store is down or unreachable; the same request may be sent again later. */
  storeUnavailable: -32001,
} as const;

/** How long a client is asked to wait before it retries a request the store could not serve. */
export const STORE_RETRY_AFTER_MS = 2000;

/** The HTTP status an error answers with: the spec names 400 and 404; the rest is ours. */
export function httpStatusOf(code: number): number {
  if (code === CODES.methodNotFound) return 404;
  if (code === CODES.internalError) return 500;
  if (code === CODES.tooManyTasks) return 429;
  if (code === CODES.storeUnavailable) return 503;
  const badRequest: number[] = [
    CODES.parseError,
    CODES.invalidRequest,
    CODES.invalidParams,
    CODES.headerMismatch,
    CODES.missingCapability,
    CODES.unsupportedVersion,
  ];
  return badRequest.includes(code) ? 400 : 200;
}

/** -32001: nothing was decided, the request may be sent again after `retryAfterMs`. */
export function storeUnavailable(): ProtocolError {
  return new ProtocolError(CODES.storeUnavailable, 'Store unavailable: retry later', { retryAfterMs: STORE_RETRY_AFTER_MS });
}

export function headerMismatch(message: string): ProtocolError {
  return new ProtocolError(CODES.headerMismatch, message);
}

export function invalidParams(message: string): ProtocolError {
  return new ProtocolError(CODES.invalidParams, message);
}

export function methodNotFound(method: string): ProtocolError {
  return new ProtocolError(CODES.methodNotFound, `Method not found: ${method.length > 100 ? `${method.slice(0, 100)}…` : method}`);
}

/** -32021 with the capability the request would have needed, as the schema requires. */
export function missingCapability(message: string, requiredCapabilities: Record<string, unknown>): ProtocolError {
  return new ProtocolError(CODES.missingCapability, message, { requiredCapabilities });
}

export function missingTasksExtension(what: string): ProtocolError {
  return missingCapability(`${what} needs the ${TASKS_EXTENSION} extension in this request's client capabilities`, {
    extensions: { [TASKS_EXTENSION]: {} },
  });
}

/** Whether a request's client capabilities declare the tasks extension. */
export function declaresTasks(capabilities: Record<string, unknown>): boolean {
  const extensions = capabilities.extensions;
  if (typeof extensions !== 'object' || extensions === null) return false;
  const tasks = (extensions as Record<string, unknown>)[TASKS_EXTENSION];
  return typeof tasks === 'object' && tasks !== null && !Array.isArray(tasks);
}
