import type { IncomingHttpHeaders } from 'node:http';
import { headerMismatch } from './protocol.js';

/** The body member an `Mcp-Name` header must repeat, by method; other methods carry none. */
const NAMED_BY: ReadonlyMap<string, string> = new Map([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
  ['tasks/get', 'taskId'],
  ['tasks/update', 'taskId'],
  ['tasks/cancel', 'taskId'],
]);

function single(headers: IncomingHttpHeaders, name: string): string | null {
  const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined ? null : text.trim();
}

/** `=?base64?…?=` carries a value that is not plain ASCII; anything else is the value itself. */
function decodeHeaderValue(text: string): string {
  const match = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(text);
  return match === null ? text : Buffer.from(match[1]!, 'base64').toString('utf8');
}

/**
 * The routing headers must repeat the body, so that a proxy may route on them without reading
 * it: `MCP-Protocol-Version` = `_meta` protocol version, `Mcp-Method` = method (values are
 * case-sensitive), `Mcp-Name` = the named member. A missing or different one is a header mismatch.
 */
export function checkRoutingHeaders(headers: IncomingHttpHeaders, method: string, params: Record<string, unknown>, version: string): void {
  const sentVersion = single(headers, 'mcp-protocol-version');
  if (sentVersion === null) throw headerMismatch('the MCP-Protocol-Version header is missing');
  if (sentVersion !== version) throw headerMismatch(`the MCP-Protocol-Version header (${sentVersion}) differs from the request's _meta (${version})`);
  const sentMethod = single(headers, 'mcp-method');
  if (sentMethod === null) throw headerMismatch('the Mcp-Method header is missing');
  if (sentMethod !== method) throw headerMismatch(`the Mcp-Method header (${sentMethod}) differs from the request's method (${method})`);
  const member = NAMED_BY.get(method);
  if (member === undefined) return;
  const named = params[member];
  const sentName = single(headers, 'mcp-name');
  if (sentName === null) throw headerMismatch(`the Mcp-Name header is missing (it repeats params.${member} of ${method})`);
  if (typeof named !== 'string' || decodeHeaderValue(sentName) !== named) throw headerMismatch(`the Mcp-Name header differs from params.${member}`);
}
