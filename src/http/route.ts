import type { IncomingHttpHeaders } from 'node:http';
import { META_KEYS } from '../core/meta-keys.js';

/** Protocol versions served by the 2025-11-25 session wire (an `initialize` negotiates one). */
const SESSION_VERSIONS = new Set(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']);

/**
 * Which generation a request without a session belongs to. "A request carrying modern
 * per-request `_meta` is served statelessly; an `initialize` request selects legacy
 * semantics": the `_meta` protocol version decides, and without one the `MCP-Protocol-Version`
 * header does (a newer version than the session wire speaks is modern, so that a 2026-07-28
 * request missing its `_meta` is told so by the wire that expects it).
 */
export function isModernRequest(headers: IncomingHttpHeaders, body: unknown): boolean {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const params = (body as { params?: unknown }).params;
    const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
    if (typeof meta === 'object' && meta !== null && META_KEYS.protocolVersion in meta) return true;
  }
  const version = headers['mcp-protocol-version'];
  const text = Array.isArray(version) ? version[0] : version;
  return text !== undefined && !SESSION_VERSIONS.has(text.trim());
}
