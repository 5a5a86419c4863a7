import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { Principal } from '../../src/tools/principal.js';
import { until } from '../support/until.js';

let server: TaskServer;
let http: RunningHttp;
const lines: Array<Record<string, unknown>> = [];
const LIMIT = 64 * 1024;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  server = createTaskServer({
    store: new MemoryStore(),
    tools: [],
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: pino({ level: 'info' }, sink),
  });
  await server.start();
  http = await startHttpServer({
    runtime: server.runtime,
    taskServer: server,
    host: '127.0.0.1',
    port: 0,
    tokens: new Map([['token-alice', { tenant: 'acme', subject: 'alice' }]]),
    maxBodyBytes: LIMIT,
  });
});

afterAll(async () => {
  await http.close();
  await server.close();
});

/**
 * Starts a 64 MiB upload over a raw socket and keeps writing until the server answers or
 * closes: what the client got, whether the connection closed, and how much it managed to send.
 */
async function upload(headers: Record<string, string>, declareLength: boolean): Promise<{ head: string; closed: boolean; sent: number }> {
  const { port } = new URL(http.url);
  const socket = connect(Number(port), '127.0.0.1');
  const total = 64 * 1024 * 1024;
  const lines = [`POST /mcp HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Content-Type: application/json', 'Accept: application/json, text/event-stream'];
  lines.push(declareLength ? `Content-Length: ${total}` : 'Transfer-Encoding: chunked');
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  let received = '';
  let sent = 0;
  let closed = false;
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => undefined);
  const done = new Promise<void>((resolve) => socket.once('close', () => ((closed = true), resolve())));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const chunk = Buffer.alloc(256 * 1024, 0x20);
  while (!closed && sent < total && !received.includes('\r\n\r\n')) {
    const payload = declareLength ? chunk : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    if (!socket.write(payload)) await Promise.race([new Promise((r) => socket.once('drain', r)), done]);
    sent += chunk.length;
  }
  await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))]);
  socket.destroy();
  return { head: received.split('\r\n\r\n')[0] ?? '', closed, sent };
}

describe('a refused upload', () => {
  it.each([
    ['over the body limit, declared', { Authorization: 'Bearer token-alice' }, true, '413'],
    ['over the body limit, chunked', { Authorization: 'Bearer token-alice' }, false, '413'],
    ['without a known token', { Authorization: 'Bearer nobody' }, true, '401'],
  ])('%s: answered, Connection: close, and the server stops reading', async (_name, headers, declared, status) => {
    const before = lines.length;
    const out = await upload(headers, declared);
    expect(out.head).toMatch(new RegExp(`^HTTP/1.1 ${status}`));
    expect(out.head.toLowerCase()).toContain('connection: close');
    expect(out.closed).toBe(true);
    // The server read at most a few buffers past the limit, not the 64 MiB the client meant to send.
    expect(out.sent).toBeLessThan(16 * 1024 * 1024);
    const logged = lines.slice(before).filter((l) => l.msg === 'request refused');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ status: Number(status) });
    expect(lines.slice(before).some((l) => 'err' in l || 'stack' in l)).toBe(false);
  });

  it('an upload the client aborts is one info line, no stack and no answer', async () => {
    const before = lines.length;
    const { port } = new URL(http.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // `Expect: 100-continue`: the server's "100 Continue" says that it has the request and reads its body.
    const reading = new Promise<void>((resolve) => socket.on('data', (d: Buffer) => d.toString().startsWith('HTTP/1.1 100') && resolve()));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer token-alice\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n`,
    );
    await reading;
    socket.write('{"jsonrpc"');
    socket.destroy();
    await until(() => (lines.length === before ? undefined : true));
    const mine = lines.slice(before);
    expect(mine.map((l) => l.msg)).toEqual(['client went away before its answer']);
    expect(mine.some((l) => 'err' in l)).toBe(false);
  });
});
