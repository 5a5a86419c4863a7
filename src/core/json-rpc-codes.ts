/**
 * Every JSON-RPC error code tasklatch sends, named once. The wires, the HTTP front and tool
 * authors (`throw new ProtocolError(JSON_RPC_CODES.invalidParams, …)`) use these names; the
 * numbers appear nowhere else. Pure data: the core names the codes, the adapters decide which
 * one a refusal answers.
 */
export const JSON_RPC_CODES = {
  /** The body is not JSON. */
  parseError: -32700,
  /**
   * The message is not a JSON-RPC request this server takes (envelope, batch, method not allowed),
   * or its caller's identity, as the host's own code gave it, fails the check of every principal.
   */
  invalidRequest: -32600,
  /** No such method (on 2025-11-25 also a task asked of a tool that does not run as one). */
  methodNotFound: -32601,
  /** The params are refused: shape, bounds, unknown or foreign task ids, bad answers. */
  invalidParams: -32602,
  /** A fault of the server or of a tool; logged where it arises. */
  internalError: -32603,
  /** 2026-07-28: an `Mcp-*` header disagrees with the body. */
  headerMismatch: -32020,
  /** 2026-07-28: the request needs a client capability (or the tasks extension) it did not declare. */
  missingCapability: -32021,
  /** 2026-07-28: the request's protocol version is not one this server speaks. */
  unsupportedVersion: -32022,
  /** Server-defined: the active-task (or stored-task) limit refused an admission. */
  tooManyTasks: -32000,
  /**
   * Server-defined: the generic server error of the HTTP front and the 2025-11-25 session
   * transport (body too large, session caps, no session yet, authorization server down).
   */
  serverError: -32000,
  /** Server-defined: the store is down or unreachable; nothing was decided, retry later. */
  storeUnavailable: -32001,
  /** Server-defined: a 2025-11-25 session id this server does not hold (or holds for another caller). */
  sessionNotFound: -32001,
} as const;

/** One of the JSON-RPC error codes of {@link JSON_RPC_CODES}. */
export type JsonRpcCode = (typeof JSON_RPC_CODES)[keyof typeof JSON_RPC_CODES];
