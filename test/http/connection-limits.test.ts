import { connect, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionLimitsOf, DEFAULT_CONNECTION_LIMITS } from '../../src/http/connection-bound.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { spawnServe } from '../support/serve-process.js';

let runtime: TaskRuntime | undefined;
let http: RunningHttp | undefined;
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const t of timers.splice(0)) clearInterval(t);
  for (const s of sockets.splice(0)) s.destroy();
  await http?.close();
  await runtime?.close();
  http = undefined;
  runtime = undefined;
});

/** Held responses of the `/hold` route, answered when the test says so. */
const held: ServerResponse[] = [];

async function start(connections: Parameters<typeof startHttpServer>[0]['connections']): Promise<{ host: string; port: number; base: string }> {
  runtime = createRuntime({ store: new MemoryStore(), tools: [], execute: false });
  await runtime.start();
  http = await startHttpServer({
    runtime,
    host: '127.0.0.1',
    port: 0,
    connections,
    // A response that stays open until released: what a held tasks/result or an SSE stream is to the connection.
    extraRoutes: (req, res, path) => {
      if (path === '/ping') {
        res.writeHead(200).end('pong');
        return Promise.resolve(true);
      }
      if (path !== '/hold') return Promise.resolve(false);
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('held\n');
      held.push(res);
      return Promise.resolve(true);
    },
  });
  const { hostname, port } = new URL(http.url);
  return { host: hostname, port: Number(port), base: `http://${hostname}:${port}` };
}

/** A raw socket that sends the start of a request's headers and then one more header byte every `everyMs`, never the end. */
async function slowloris(host: string, port: number, everyMs: number): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect({ host, port });
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  socket.write('GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
  const drip = setInterval(() => socket.writable && socket.write('a'), everyMs);
  timers.push(drip);
  void closed.then(() => clearInterval(drip));
  return { socket, closed };
}

/** A raw keep-alive connection that sent one whole request and has read its whole answer, left open. */
async function answeredKeepAlive(host: string, port: number): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect({ host, port });
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  const answered = new Promise<void>((resolve) =>
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      // The whole answer: its body, sent chunked on a kept-alive connection, then the last chunk.
      if (received.includes('pong') && (received.endsWith('pong') || received.endsWith('0\r\n\r\n'))) resolve();
    }),
  );
  socket.write('GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
  await answered;
  return { socket, closed };
}

function text(chunk: { value?: Uint8Array | undefined }): string {
  return new TextDecoder().decode(chunk.value);
}

/** A plain request on a fresh connection: its status, or the error that ended it. */
async function fresh(url: string): Promise<number | string> {
  return fetch(url, { headers: { connection: 'close' } }).then(
    async (res) => {
      await res.text();
      return res.status;
    },
    (error: unknown) => String((error as { cause?: unknown }).cause ?? error),
  );
}

describe('HTTP connection limits', () => {
  it('closes connections whose headers trickle in once the header time is up, while a normal client is answered', async () => {
    const { host, port, base } = await start({ headersTimeoutMs: 300, requestTimeoutMs: 300 });
    const slow = await Promise.all(Array.from({ length: 50 }, () => slowloris(host, port, 50)));
    // Every slow socket was still sending when a plain client asked: the client is answered.
    expect(await fresh(`${base}/ping`)).toBe(200);
    const answers = await Promise.all(slow.map((s) => s.closed));
    // Each one ended by the server, with node's 408 for the request it never finished.
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(await fresh(`${base}/ping`)).toBe(200);
  });

  it('does not end a response that outlives the request time: only the request must arrive in time', async () => {
    const { host, port, base } = await start({ headersTimeoutMs: 200, requestTimeoutMs: 200 });
    // A POST whose body is read, as a held tasks/result's is.
    const response = await fetch(`${base}/hold`, { method: 'POST', body: JSON.stringify({ taskId: 'x'.repeat(10_000) }) });
    const reader = response.body!.getReader();
    expect(text(await reader.read())).toBe('held\n');
    // A socket opened after the held request is closed by the header time: the deadline check
    // has run past the held request's own request deadline by then.
    const later = await slowloris(host, port, 20);
    expect(await later.closed).toMatch(/^HTTP\/1\.1 408/);
    held.shift()!.end('done\n');
    expect(text(await reader.read())).toBe('done\n');
  });

  it('at the bound, a new connection takes the place of the oldest one with no request in flight', async () => {
    const { host, port, base } = await start({ maxConnections: 20, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
    const slow = [];
    for (let i = 0; i < 20; i++) slow.push(await slowloris(host, port, 1000));
    // The bound is reached by sockets that never finish their headers; a plain client still gets through.
    expect(await fresh(`${base}/ping`)).toBe(200);
    // It took the place of the oldest, closed without an answer.
    expect(await slow[0]!.closed).toBe('');
    // Back at the bound (the client's connection closed after its answer): the next one goes the same way.
    slow.push(await slowloris(host, port, 1000));
    expect(await fresh(`${base}/ping`)).toBe(200);
    expect(await slow[1]!.closed).toBe('');
  });

  it('at the bound, a kept-alive connection whose request was answered counts as idle and makes room', async () => {
    const { host, port, base } = await start({ maxConnections: 3 });
    const kept = [];
    for (let i = 0; i < 3; i++) kept.push(await answeredKeepAlive(host, port));
    // Each has had its request and its answer, and stays open: none holds a request any more.
    expect(await fresh(`${base}/ping`)).toBe(200);
    expect(await kept[0]!.closed).toMatch(/^HTTP\/1\.1 200/);
  });

  it('at the bound with every connection holding a request, a new connection is refused and the held ones go on', async () => {
    const { base } = await start({ maxConnections: 5 });
    const readers = [];
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${base}/hold`, { headers: { connection: 'close' } });
      const reader = response.body!.getReader();
      await reader.read();
      readers.push(reader);
    }
    expect(await fresh(`${base}/ping`)).toMatch(/other side closed|ECONNRESET|socket/i);
    for (const res of held.splice(0)) res.end('done\n');
    for (const reader of readers) expect(text(await reader.read())).toBe('done\n');
    expect(await fresh(`${base}/ping`)).toBe(200);
  });

  it('serve takes them from its flags: a header that trickles in is cut at --headers-timeout-ms', async () => {
    const serve = await spawnServe(['--store', 'memory', '--headers-timeout-ms', '300', '--request-timeout-ms', '300', '--max-connections', '3']);
    try {
      const { hostname, port } = new URL(serve.url);
      const slow = await slowloris(hostname, Number(port), 50);
      expect(await slow.closed).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await serve.stop();
    }
  });

  it('refuses limits node could not keep', () => {
    expect(connectionLimitsOf({})).toEqual(DEFAULT_CONNECTION_LIMITS);
    expect(() => connectionLimitsOf({ headersTimeoutMs: 60_000, requestTimeoutMs: 30_000 })).toThrow(/headersTimeoutMs \(60000\) must not be longer/);
    expect(() => connectionLimitsOf({ maxConnections: 0 })).toThrow(/maxConnections must be a whole number/);
  });
});
