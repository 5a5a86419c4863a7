import type { IncomingHttpHeaders } from 'node:http';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';

/** How many 2025-11-25 sessions an endpoint keeps, and for how long; every one is in the README. */
export interface SessionLimits {
  /** Open sessions of all callers; an `initialize` beyond it answers 503. */
  maxSessions: number;
  /** Open sessions of one caller (auth key); an `initialize` beyond it answers 429. */
  maxPerCaller: number;
  /** A session with no request and no open response for this long is closed (ms). */
  idleMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  maxSessions: 1000,
  maxPerCaller: 100,
  idleMs: 30 * 60 * 1000,
};

/**
 * The SDK transport's own Accept and Content-Type checks for a POST, made before a transport
 * exists (the same rules, the same answers): a refused `initialize` then builds nothing.
 */
export function mediaTypeProblem(headers: IncomingHttpHeaders): { status: 406 | 415; message: string } | null {
  const accept = headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return { status: 406, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' };
  }
  if (!isJsonContentType(headers['content-type'])) return { status: 415, message: 'Unsupported Media Type: Content-Type must be application/json' };
  return null;
}
