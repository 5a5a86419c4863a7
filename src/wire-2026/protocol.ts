import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { TASKS_EXTENSION } from '../core/meta-keys.js';
import { ProtocolError } from '../tools/protocol-error.js';

/**
 * The MCP 2026-07-28 core as this wire speaks it: stateless requests, each carrying its own
 * protocol version and client capabilities in `_meta`, and the tasks extension on top. Its
 * codes are `JSON_RPC_CODES`, its `_meta` keys `META_KEYS` (both of the core).
 */
export const PROTOCOL_VERSION = '2026-07-28';
export const SUPPORTED_VERSIONS = [PROTOCOL_VERSION] as const;

/** The HTTP status an error answers with: the spec names 400 and 404; the rest is ours. */
export function httpStatusOf(code: number): number {
  if (code === JSON_RPC_CODES.methodNotFound) return 404;
  if (code === JSON_RPC_CODES.internalError) return 500;
  if (code === JSON_RPC_CODES.tooManyTasks) return 429;
  if (code === JSON_RPC_CODES.storeUnavailable) return 503;
  const badRequest: number[] = [
    JSON_RPC_CODES.parseError,
    JSON_RPC_CODES.invalidRequest,
    JSON_RPC_CODES.invalidParams,
    JSON_RPC_CODES.headerMismatch,
    JSON_RPC_CODES.missingCapability,
    JSON_RPC_CODES.unsupportedVersion,
  ];
  return badRequest.includes(code) ? 400 : 200;
}

export function headerMismatch(message: string): ProtocolError {
  return new ProtocolError(JSON_RPC_CODES.headerMismatch, message);
}

export function invalidParams(message: string): ProtocolError {
  return new ProtocolError(JSON_RPC_CODES.invalidParams, message);
}

export function methodNotFound(method: string): ProtocolError {
  return new ProtocolError(JSON_RPC_CODES.methodNotFound, `Method not found: ${method.length > 100 ? `${method.slice(0, 100)}…` : method}`);
}

/** Missing capability, with the capability the request would have needed, as the schema requires. */
export function missingCapability(message: string, requiredCapabilities: Record<string, unknown>): ProtocolError {
  return new ProtocolError(JSON_RPC_CODES.missingCapability, message, { requiredCapabilities });
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
