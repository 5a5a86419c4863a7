import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Logger } from '../runtime/log.js';

/** The most of a refusal's body kept to read its JSON-RPC code from. */
const KEPT_BYTES = 2048;

/**
 * One structured log line for every request answered with an HTTP 4xx, whoever wrote the answer
 * (this layer, the session transports or the SDK transport): the status, the JSON-RPC code and
 * message when the body has them, the request's method, id and session. A client's fault is
 * logged at `info` and never with a stack; server faults (5xx, internal error) are logged, with their
 * stack, where they arise. A client that leaves before its answer is one `info` line too.
 *
 * The HTTP server makes its responses of this class (`createServer({ ServerResponse })`): what
 * a refusal writes is kept by `write` and `end` on the prototype. Wrapping them on each response
 * instead (own properties on a `ServerResponse`) gave every response a shape of its own, and cost
 * a poll ~4 µs of node's HTTP code running on megamorphic property loads.
 */
export class RefusalLoggingResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  private kept: Buffer[] | null = null;
  private keptBytes = 0;
  private logger: Logger | null = null;
  /** The request's body once read: the log line names its method and id. */
  requestBody: unknown = undefined;
  /** Made on first use (`clientGone`): a poll, which never looks at it, makes none. */
  private goneController: AbortController | null = null;
  private gone = false;

  /**
   * Logs this response's refusal, or the client's going away, when it closes. One listener,
   * shared by every response (a method of the prototype, not a closure per response).
   */
  watch(logger: Logger): void {
    this.logger = logger;
    this.on('close', closed);
  }

  /** Aborts when the client goes away before its answer (the response closed unfinished). */
  get clientGone(): AbortSignal {
    if (this.goneController === null) {
      this.goneController = new AbortController();
      if (this.gone) this.goneController.abort();
    }
    return this.goneController.signal;
  }

  /** The response closed: a client that left is told to whoever listens, a refusal is logged. */
  onClosed(): void {
    const status = this.statusCode;
    const gone = !this.writableFinished;
    if (gone) {
      this.gone = true;
      this.goneController?.abort();
    }
    const logger = this.logger;
    // An answered request below 400 logs nothing: no context is built for it (every poll is one).
    if (logger === null || (!gone && (status < 400 || status >= 500))) return;
    const req = this.req;
    const context = { status, httpMethod: req.method, sessionId: req.headers['mcp-session-id'], ...messageOf(this.requestBody) };
    if (gone) return req.method === 'POST' ? logger.info(context, 'client went away before its answer') : undefined;
    logger.info({ ...context, ...errorOf(Buffer.concat(this.kept ?? []).toString('utf8')) }, 'request refused');
  }

  override write(...args: unknown[]): boolean {
    this.keep(args[0]);
    return (ServerResponse.prototype.write as (...a: unknown[]) => boolean).apply(this, args);
  }

  override end(...args: unknown[]): this {
    this.keep(args[0]);
    (ServerResponse.prototype.end as (...a: unknown[]) => unknown).apply(this, args);
    return this;
  }

  private keep(chunk: unknown): void {
    if (this.statusCode < 400 || this.keptBytes >= KEPT_BYTES || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buffer = Buffer.isBuffer(chunk) ? chunk : typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
    (this.kept ??= []).push(buffer.subarray(0, KEPT_BYTES - this.keptBytes));
    this.keptBytes += Math.min(buffer.length, KEPT_BYTES - this.keptBytes);
  }
}

function closed(this: RefusalLoggingResponse): void {
  this.onClosed();
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
