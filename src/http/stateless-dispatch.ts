import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import type { StatelessReply, StatelessRequest, StatelessServer } from '../wire-2026/server.js';
import type { Principal } from '../tools/principal.js';
import type { RefusalLoggingResponse } from './refusal-log.js';

/**
 * A 2026-07-28 request, its body already parsed: straight from node:http's request to its
 * response, with no session object and no conversion to web streams. The request's signal
 * fires only when the client goes away before its answer (a stream it stopped reading, a call
 * it gave up).
 */
export async function serveStateless(
  stateless: StatelessServer,
  req: IncomingMessage,
  res: RefusalLoggingResponse,
  body: unknown,
  principal: Principal,
): Promise<void> {
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return sendJson(res, 405, { jsonrpc: '2.0', error: { code: JSON_RPC_CODES.invalidRequest, message: 'Method not allowed: 2026-07-28 requests are POSTs' } });
  }
  const reply = await stateless.handle(new HttpStatelessRequest(body, req, res, principal));
  return send(res, reply);
}

/**
 * One request as the stateless server sees it. Its signal is made on first use, by a getter of
 * this class (a poll, which never looks at it, makes no controller): an object literal with a
 * getter would make a hidden class of its own per request (see `HttpAuthRequest`).
 */
class HttpStatelessRequest implements StatelessRequest {
  readonly headers: IncomingHttpHeaders;

  constructor(
    readonly body: unknown,
    req: IncomingMessage,
    private readonly res: RefusalLoggingResponse,
    readonly principal: Principal,
  ) {
    this.headers = req.headers;
  }

  get signal(): AbortSignal {
    return this.res.clientGone;
  }
}

/** A JSON reply is written at once; a stream's promise settles when it ends. */
function send(res: RefusalLoggingResponse, reply: StatelessReply): Promise<void> | undefined {
  if (reply.kind === 'accepted') {
    res.writeHead(202).end();
    return undefined;
  }
  if (reply.kind === 'json') {
    for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
    if (reply.status === 503) retryAfter(res, reply.body);
    sendJson(res, reply.status, reply.body);
    return undefined;
  }
  return stream(res, reply);
}

async function stream(res: RefusalLoggingResponse, reply: Extract<StatelessReply, { kind: 'stream' }>): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  await reply.open(
    {
      send: (message) => void res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`),
      comment: (text = '') => void res.write(`: ${text}\n\n`),
    },
    res.clientGone,
  );
  res.end();
}

/** `Retry-After` (whole seconds, at least 1) from the error's `data.retryAfterMs`, when it has one. */
function retryAfter(res: ServerResponse, body: unknown): void {
  const ms = (body as { error?: { data?: { retryAfterMs?: unknown } } } | null)?.error?.data?.retryAfterMs;
  if (typeof ms === 'number' && Number.isFinite(ms)) res.setHeader('Retry-After', String(Math.max(1, Math.ceil(ms / 1000))));
}

/**
 * With its length stated, a reply goes out as one write of head and body; without it node
 * frames the body in chunks (size line, body, CRLF, last chunk) and writes four buffers.
 */
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
