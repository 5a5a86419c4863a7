import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StatelessReply, StatelessServer } from '../stateless/stateless-server.js';
import type { Principal } from '../tools/principal.js';

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/**
 * A 2026-07-28 request, its body already parsed: straight from node:http's request to its
 * response, with no session object and no conversion to web streams. The `closed` signal fires
 * only when the client goes away before its answer (a stream it stopped reading, a call it
 * gave up): an answered request never builds the abort's DOMException.
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
    return sendJson(res, 405, { jsonrpc: '2.0', error: { code: -32600, message: 'Method not allowed: 2026-07-28 requests are POSTs' } });
  }
  const closed = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) closed.abort();
  });
  const reply = await stateless.handle({ body, headers: req.headers, principal, signal: closed.signal });
  await send(res, reply, closed.signal);
}

async function send(res: ServerResponse, reply: StatelessReply, closed: AbortSignal): Promise<void> {
  if (reply.kind === 'accepted') {
    res.writeHead(202).end();
    return;
  }
  if (reply.kind === 'json') return sendJson(res, reply.status, reply.body);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  await reply.open(
    {
      send: (message) => void res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`),
      comment: (text = '') => void res.write(`: ${text}\n\n`),
    },
    closed,
  );
  res.end();
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, JSON_HEADERS).end(JSON.stringify(body));
}
