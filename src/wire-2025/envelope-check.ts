import { InitializeRequestSchema, JSONRPCMessageSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';

/** Why a POSTed body is refused before the SDK transport sees it: the JSON-RPC error and the id to echo. */
export interface EnvelopeProblem {
  code: typeof JSON_RPC_CODES.invalidRequest | typeof JSON_RPC_CODES.invalidParams;
  message: string;
  id: string | number | null;
}

/**
 * The methods whose params the SDK itself parses: a bad one would answer internal error with a
 * validation dump. A Map: a client's method name is never looked up on a plain object.
 */
const SDK_PARSED: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
]);

const MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

/**
 * The JSON-RPC codes the spec names, for a body that is JSON but not a message the 2025-11-25
 * wire can take: a malformed envelope or a batch is an invalid request, params of the wrong
 * shape are invalid params; each with one short sentence. The SDK transport would answer both
 * as a parse error, and a malformed `initialize` with the raw schema issues; it would also
 * handle a batch of any length, one message at a time, in one request. null when the body is
 * one well-formed message.
 */
export function checkEnvelope(body: unknown): EnvelopeProblem | null {
  // Batching left MCP with 2025-06-18: a POST carries one message, as on 2026-07-28. Refused
  // whole, before any member is looked at: no member of it is handled.
  if (Array.isArray(body)) return invalid('a POST carries one JSON-RPC message; batches are not part of 2025-11-25', null);
  return checkMessage(body);
}

function checkMessage(message: unknown): EnvelopeProblem | null {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return invalid('a message is a JSON object', null);
  const m = message as Record<string, unknown>;
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isInteger(m.id)) ? m.id : null;
  if (m.jsonrpc !== '2.0') return invalid('"jsonrpc" must be "2.0"', id);
  const extra = Object.keys(m).find((key) => !MEMBERS.has(key));
  if (extra !== undefined) return invalid(`unknown member ${JSON.stringify(extra.slice(0, 40))}`, id);
  if ('id' in m && id === null) return invalid('"id" must be a string or an integer', null);
  if ('method' in m) {
    if (typeof m.method !== 'string' || m.method.length === 0) return invalid('"method" must be a non-empty string', id);
    if ('result' in m || 'error' in m) return invalid('a request has no "result" or "error"', id);
    if ('params' in m && (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))) {
      return params(`Invalid params for ${m.method.slice(0, 60)}: params must be an object`, id);
    }
    const schema = SDK_PARSED.get(m.method);
    const parsed = (schema ?? JSONRPCMessageSchema).safeParse(schema === undefined ? m : { method: m.method, params: m.params });
    return parsed.success ? null : params(`Invalid params for ${m.method.slice(0, 60)}: ${firstIssue(parsed.error)}`, id);
  }
  if (id === null) return invalid('a message has a "method", or an "id" and a "result" or "error"', null);
  if ('result' in m === 'error' in m) return invalid('a response has exactly one of "result" and "error"', id);
  const parsed = JSONRPCMessageSchema.safeParse(m);
  return parsed.success ? null : invalid(`malformed response: ${firstIssue(parsed.error)}`, id);
}

function invalid(why: string, id: string | number | null): EnvelopeProblem {
  return { code: JSON_RPC_CODES.invalidRequest, message: `Invalid Request: ${why}`, id };
}

function params(message: string, id: string | number | null): EnvelopeProblem {
  return { code: JSON_RPC_CODES.invalidParams, message, id };
}

/** The first issue as `path: message`, short: never the whole schema dump. */
function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'malformed';
  const path = issue.path.map(String).join('.');
  const text = issue.code === 'invalid_union' ? 'not a valid value' : issue.message;
  return `${path === '' ? '(root)' : path}: ${text}`.slice(0, 200);
}
