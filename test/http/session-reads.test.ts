import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readBody } from '../../src/http/read-body.js';
import { RefusalLoggingResponse } from '../../src/http/refusal-log.js';
import { createLogger } from '../../src/runtime/log.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { SessionTransports } from '../../src/wire-2025/session-transports.js';
import { until } from '../support/until.js';
import { holdTool } from '../support/wire-server.js';

/**
 * The plain reads of an established session (tasks/get, tasks/list, tasks/cancel) are answered
 * off the SDK transport: here each is sent, byte for byte the same request, to an endpoint that
 * answers them so and to one where they go through the SDK transport, and the two replies are
 * compared as the client reads them (status line, headers in order, body bytes).
 */

interface Endpoint {
  port: number;
  http: Server;
  sessions: SessionTransports;
  sessionId: string;
}

let taskServer: TaskServer;
let plain: Endpoint;
let sdk: Endpoint;

async function endpoint(plainReads: boolean): Promise<Endpoint> {
  const sessions = new SessionTransports(taskServer, {}, plainReads);
  const http = createServer({ ServerResponse: RefusalLoggingResponse }, (req, res) => {
    void (async () => {
      const read = await readBody(req, 1 << 20);
      const body = read.kind === 'json' ? read.value : undefined;
      await sessions.handle(req, res, body, header(req, 'mcp-session-id'), 'acme/alice');
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const opened = await exchange(port, null, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  const sessionId = /^mcp-session-id: (\S+)$/m.exec(opened.head)?.[1];
  if (sessionId === undefined) throw new Error(`initialize answered ${opened.head}`);
  await exchange(port, sessionId, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return { port, http, sessions, sessionId };
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}

/** One POST on its own connection, and its reply as raw text: head (without the status line's framing) and body. */
function exchange(port: number, sessionId: string | null, message: unknown): Promise<{ raw: string; head: string; body: string }> {
  const body = JSON.stringify(message);
  const lines = [
    'POST /mcp HTTP/1.1',
    `host: 127.0.0.1:${port}`,
    'content-type: application/json',
    'accept: application/json, text/event-stream',
    ...(sessionId === null ? [] : [`mcp-session-id: ${sessionId}`, 'mcp-protocol-version: 2025-11-25']),
    `content-length: ${Buffer.byteLength(body)}`,
  ];
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
      const reply = complete(raw);
      if (reply === null) return;
      socket.destroy();
      resolve({ raw, ...reply });
    });
    socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  });
}

/** A whole reply's head and body (a chunked one de-chunked), or null while more is to come. */
function complete(raw: string): { head: string; body: string } | null {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = raw.slice(0, end);
  const rest = raw.slice(end + 4);
  const length = /^content-length: (\d+)$/im.exec(head);
  if (length !== null) return rest.length >= Number(length[1]) ? { head, body: rest.slice(0, Number(length[1])) } : null;
  if (!/^transfer-encoding: chunked$/im.test(head)) return { head, body: '' };
  let body = '';
  for (let at = 0; ;) {
    const eol = rest.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(rest.slice(at, eol), 16);
    if (size === 0) return rest.length >= eol + 4 ? { head, body } : null;
    if (rest.length < eol + 2 + size + 2) return null;
    body += rest.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

/** What a client reads of a reply: status line, headers in order (but Date and the framing), body. */
function asRead(reply: { head: string; body: string }, sessionId: string): { head: string[]; body: string } {
  const head = reply.head
    .split('\r\n')
    .filter((line) => !/^(date|content-length|transfer-encoding):/i.test(line))
    .map((line) => line.replace(sessionId, '<session>'));
  return { head, body: reply.body };
}

/** The same request on both endpoints: the two replies as read, and whether the SDK transport took each. */
async function both(message: Record<string, unknown>) {
  const handled = vi.spyOn(StreamableHTTPServerTransport.prototype, 'handleRequest');
  try {
    const fast = await exchange(plain.port, plain.sessionId, message);
    const viaTransportOnPlain = handled.mock.calls.length;
    const reference = await exchange(sdk.port, sdk.sessionId, message);
    const viaTransportOnSdk = handled.mock.calls.length - viaTransportOnPlain;
    return { fast: asRead(fast, plain.sessionId), reference: asRead(reference, sdk.sessionId), raw: fast.raw, viaTransportOnPlain, viaTransportOnSdk };
  } finally {
    handled.mockRestore();
  }
}

async function callAsTask(id: number): Promise<string> {
  const reply = await exchange(plain.port, plain.sessionId, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'hold', arguments: {}, task: { ttl: 60_000 } },
  });
  const taskId = /"taskId":"([^"]+)"/.exec(reply.body)?.[1];
  if (taskId === undefined) throw new Error(`tools/call answered ${reply.body}`);
  return taskId;
}

beforeAll(async () => {
  taskServer = createTaskServer({
    store: new MemoryStore(),
    tools: [holdTool],
    authenticate: () => ({ tenant: 'acme', subject: 'alice' }),
    logger: createLogger('silent'),
  });
  await taskServer.start();
  plain = await endpoint(true);
  sdk = await endpoint(false);
});

afterAll(async () => {
  for (const e of [plain, sdk]) {
    await e.sessions.close();
    e.http.closeAllConnections();
    await new Promise<void>((resolve) => e.http.close(() => resolve()));
  }
  await taskServer.close();
});

describe('plain reads of a session, off the SDK transport', () => {
  it('answer tasks/get, tasks/list and tasks/cancel in the bytes the SDK transport writes, found or not, with string and number ids', async () => {
    const working = await callAsTask(1);
    const cancelled = await callAsTask(2);
    await exchange(plain.port, plain.sessionId, { jsonrpc: '2.0', id: 3, method: 'tasks/cancel', params: { taskId: cancelled } });
    const requests: Array<Record<string, unknown>> = [
      { jsonrpc: '2.0', id: 10, method: 'tasks/get', params: { taskId: working } },
      { jsonrpc: '2.0', id: 'get-string-id', method: 'tasks/get', params: { taskId: cancelled } },
      { jsonrpc: '2.0', id: 11, method: 'tasks/get', params: { taskId: '00000000-0000-4000-8000-000000000000' } },
      { jsonrpc: '2.0', id: 12, method: 'tasks/get', params: { taskId: 'not an id' } },
      { jsonrpc: '2.0', id: 13, method: 'tasks/list' },
      { jsonrpc: '2.0', id: 14, method: 'tasks/list', params: {} },
      { jsonrpc: '2.0', id: 15, method: 'tasks/list', params: { cursor: 'not a cursor' } },
      { jsonrpc: '2.0', id: 16, method: 'tasks/cancel', params: { taskId: cancelled } },
      { jsonrpc: '2.0', id: 17, method: 'tasks/cancel', params: { taskId: '00000000-0000-4000-8000-000000000000' } },
    ];
    for (const request of requests) {
      const { fast, reference, raw, viaTransportOnPlain, viaTransportOnSdk } = await both(request);
      expect(fast, JSON.stringify(request)).toEqual(reference);
      expect(fast.body.startsWith('event: message\ndata: {'), JSON.stringify(request)).toBe(true);
      expect([viaTransportOnPlain, viaTransportOnSdk], JSON.stringify(request)).toEqual([0, 1]);
      // Head and body framed by their length, in one reply.
      expect(raw).toContain(`\r\ncontent-length: ${Buffer.byteLength(fast.body)}\r\n`);
    }
    // A cancellation is one store write: the first endpoint's cancels the task, the second's finds it already cancelled.
    const last = await both({ jsonrpc: '2.0', id: 18, method: 'tasks/cancel', params: { taskId: working } });
    expect(last.fast.body).toContain('"status":"cancelled"');
    expect(last.reference.body).toContain('already cancelled');
  });

  it('leave to the SDK transport whatever is not a plain read: extra params, _meta, a bad id, other methods', async () => {
    const taskId = await callAsTask(20);
    for (const request of [
      { jsonrpc: '2.0', id: 21, method: 'tasks/get', params: { taskId, _meta: { progressToken: 1 } } },
      { jsonrpc: '2.0', id: 22, method: 'tasks/get', params: { taskId, extra: true } },
      { jsonrpc: '2.0', id: 23, method: 'tasks/get', params: { taskId: 7 } },
      { jsonrpc: '2.0', id: 24, method: 'tasks/get' },
      { jsonrpc: '2.0', id: 25.5, method: 'tasks/get', params: { taskId } },
      { jsonrpc: '2.0', id: 26, method: 'tools/list' },
      { jsonrpc: '2.0', id: 27, method: 'ping' },
    ]) {
      const { fast, reference, viaTransportOnPlain, viaTransportOnSdk } = await both(request);
      expect(fast, JSON.stringify(request)).toEqual(reference);
      expect(viaTransportOnPlain, JSON.stringify(request)).toBe(viaTransportOnSdk);
    }
  });

  it('reads the stored record each time: a change made through another endpoint is what the next read answers', async () => {
    const taskId = await callAsTask(30);
    const first = await exchange(plain.port, plain.sessionId, { jsonrpc: '2.0', id: 31, method: 'tasks/get', params: { taskId } });
    expect(first.body).toContain('"status":"working"');
    await exchange(sdk.port, sdk.sessionId, { jsonrpc: '2.0', id: 32, method: 'tasks/cancel', params: { taskId } });
    await until(async () => {
      const next = await exchange(plain.port, plain.sessionId, { jsonrpc: '2.0', id: 33, method: 'tasks/get', params: { taskId } });
      return next.body.includes('"status":"cancelled"') ? true : undefined;
    });
  });

  it('answers a session id it did not issue as not found, whatever the read', async () => {
    const taskId = await callAsTask(40);
    const other = await new Promise<string>((resolve, reject) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tasks/get', params: { taskId } });
      const socket = connect(plain.port, '127.0.0.1');
      let raw = '';
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => (raw += chunk.toString('latin1')));
      socket.on('end', () => resolve(raw));
      socket.write(
        `POST /mcp HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: ${sdk.sessionId}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    });
    expect(other).toMatch(/^HTTP\/1\.1 404 /);
    expect(other).toContain('Session not found');
  });
});
