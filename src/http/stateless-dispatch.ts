import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import type { StatelessReply, StatelessServer } from '../stateless/stateless-server.js';
import type { Principal } from '../tools/principal.js';

/**
 * A 2026-07-28 request, its body already parsed: straight from node:http's request to its
 * response, with no session object and no conversion to web streams. The request's signal
 * fires only when the client goes away before its answer (a stream it stopped reading, a call
 * it gave up).
 */
export async function serveStateless(
  stateless: StatelessServer,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  principal: Principal,
): Promise<void> {
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return sendJson(res, 405, { jsonrpc: '2.0', error: { code: JSON_RPC_CODES.invalidRequest, message: 'Method not allowed: 2026-07-28 requests are POSTs' } });
  }
  const closed = closeSignal(res);
  const reply = await stateless.handle({
    body,
    headers: req.headers,
    principal,
    get signal() {
      return closed.signal;
    },
  });
  await send(res, reply, closed);
}

/**
 * Aborts when the client goes away before its answer. The controller is made on first use: a
 * poll, which never looks at it, makes none.
 */
function closeSignal(res: ServerResponse): { readonly signal: AbortSignal } {
  let controller: AbortController | null = null;
  let gone = false;
  res.once('close', () => {
    if (res.writableFinished) return;
    gone = true;
    controller?.abort();
  });
  return {
    get signal() {
      if (controller === null) {
        controller = new AbortController();
        if (gone) controller.abort();
      }
      return controller.signal;
    },
  };
}

async function send(res: ServerResponse, reply: StatelessReply, closed: { readonly signal: AbortSignal }): Promise<void> {
  if (reply.kind === 'accepted') {
    res.writeHead(202).end();
    return;
  }
  if (reply.kind === 'json') {
    for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
    if (reply.status === 503) retryAfter(res, reply.body);
    return sendJson(res, reply.status, reply.body);
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  await reply.open(
    {
      send: (message) => void res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`),
      comment: (text = '') => void res.write(`: ${text}\n\n`),
    },
    closed.signal,
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
