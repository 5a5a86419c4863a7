import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../runtime/log.js';

/** The most of a refusal's body kept to read its JSON-RPC code from. */
const KEPT_BYTES = 2048;

/**
 * One structured log line for every request answered with an HTTP 4xx, whoever wrote the answer
 * (this layer, the session transports or the SDK transport): the status, the JSON-RPC code and
 * message when the body has them, the request's method, id and session. A client's fault is
 * logged at `info` and never with a stack; server faults (5xx, internal error) are logged, with their
 * stack, where they arise. A client that leaves before its answer is one `info` line too.
 */
export function logRefusals(req: IncomingMessage, res: ServerResponse, logger: Logger, body: () => unknown): void {
  const kept: Buffer[] = [];
  let size = 0;
  const keep = (chunk: unknown) => {
    if (res.statusCode < 400 || size >= KEPT_BYTES || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buffer = Buffer.isBuffer(chunk) ? chunk : typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
    kept.push(buffer.subarray(0, KEPT_BYTES - size));
    size += Math.min(buffer.length, KEPT_BYTES - size);
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((...args: unknown[]) => (keep(args[0]), write(...args))) as typeof res.write;
  res.end = ((...args: unknown[]) => (keep(args[0]), end(...args))) as typeof res.end;
  res.once('close', () => {
    const status = res.statusCode;
    const gone = !res.writableFinished;
    // An answered request below 400 logs nothing: no context is built for it (every poll is one).
    if (!gone && (status < 400 || status >= 500)) return;
    const context = { status, httpMethod: req.method, sessionId: req.headers['mcp-session-id'], ...messageOf(body()) };
    if (gone) return req.method === 'POST' ? logger.info(context, 'client went away before its answer') : undefined;
    logger.info({ ...context, ...errorOf(Buffer.concat(kept).toString('utf8')) }, 'request refused');
  });
}

/** The method and id of the request, when the body is one readable message. */
function messageOf(body: unknown): { method?: string; id?: unknown } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return {};
  const { method, id } = body as { method?: unknown; id?: unknown };
  return {
    ...(typeof method === 'string' ? { method: method.slice(0, 100) } : {}),
    ...(typeof id === 'string' ? { id: id.slice(0, 100) } : typeof id === 'number' ? { id } : {}),
  };
}

/** The JSON-RPC code and message of a refusal's body, or the body's text as the reason. */
function errorOf(text: string): { code?: number; reason: string } {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    const error = typeof parsed.error === 'object' && parsed.error !== null ? (parsed.error as { code?: unknown; message?: unknown }) : undefined;
    if (error !== undefined) {
      const reason = String(error.message).slice(0, 300);
      return typeof error.code === 'number' ? { code: error.code, reason } : { reason };
    }
    if (typeof parsed.error === 'string') return { reason: parsed.error.slice(0, 300) };
  } catch {
    // not JSON: the text itself
  }
  return { reason: text.slice(0, 300) };
}
