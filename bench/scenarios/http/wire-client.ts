import { connect, type Socket } from 'node:net';
import type { WireReply } from './poll-wire.js';

/**
 * One client's own HTTP/1.1 connection, kept open between its requests, as a client that polls
 * keeps its connection alive. The polling fleet runs thousands of these beside the server on the
 * same 2-core machine, so a request has to cost the fleet little: with `node:http`'s agent, 8,000
 * clients took 57 % of a core keeping 1,024 idle connections (the others connecting again for
 * each poll) and 90 % keeping all of them; with this client, 35 % keeping all (full runs of
 * 3cdf350 and 8525945, and the capacity scenario at 8,000 clients after this change). A request
 * is one write of its head and body; the reply is read by its status line, its
 * `content-length` or chunked body, and the one header a poll needs (`mcp-session-id`). Written
 * here because it only speaks to our own server and the bare one, one request at a time per
 * connection.
 */
export class WireConnection {
  private socket: Socket | null = null;
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (reply: WireReply) => void; reject: (error: Error) => void } | null = null;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly path: string,
  ) {}

  /** One POST; a request is sent only when the one before it was answered. */
  request(headers: Record<string, string>, body: string): Promise<WireReply> {
    if (this.waiting !== null) return Promise.reject(new Error('one request at a time per connection'));
    const socket = this.socket ?? this.open();
    const payload = Buffer.from(body, 'utf8');
    let head = `POST ${this.path} HTTP/1.1\r\nhost: ${this.host}:${this.port}\r\ncontent-length: ${payload.length}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    return new Promise<WireReply>((resolve, reject) => {
      this.waiting = { resolve, reject };
      socket.write(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), payload]));
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private open(): Socket {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    this.buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.answer();
    });
    const fail = (error: Error) => {
      if (this.socket === socket) this.socket = null;
      const waiting = this.waiting;
      this.waiting = null;
      waiting?.reject(error);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('the server closed the connection')));
    return socket;
  }

  /** Answers the request waiting once its whole reply is buffered. */
  private answer(): void {
    if (this.waiting === null) return;
    const reply = parseReply(this.buffered);
    if (reply === null) return;
    this.buffered = this.buffered.subarray(reply.length);
    const waiting = this.waiting;
    this.waiting = null;
    if (reply.close) this.close();
    waiting.resolve(reply.reply);
  }
}

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/** A whole reply at the start of `data` and its length in bytes, or null while it is incomplete. */
function parseReply(data: Buffer): { reply: WireReply; length: number; close: boolean } | null {
  const headEnd = data.indexOf(HEAD_END);
  if (headEnd < 0) return null;
  const lines = data.toString('latin1', 0, headEnd).split('\r\n');
  const status = Number((lines[0] ?? '').split(' ')[1]);
  let contentLength = -1;
  let chunked = false;
  let close = false;
  let sessionId: string | null = null;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-length') contentLength = Number(value);
    else if (name === 'transfer-encoding') chunked = value.toLowerCase().includes('chunked');
    else if (name === 'connection') close = value.toLowerCase() === 'close';
    else if (name === 'mcp-session-id') sessionId = value;
  }
  const bodyStart = headEnd + HEAD_END.length;
  if (chunked) {
    const body = readChunked(data, bodyStart);
    if (body === null) return null;
    return { reply: { status, body: body.text, sessionId }, length: body.end, close };
  }
  const length = Math.max(0, contentLength);
  if (data.length < bodyStart + length) return null;
  return { reply: { status, body: data.toString('utf8', bodyStart, bodyStart + length), sessionId }, length: bodyStart + length, close };
}

/** A chunked body from `start`: its text and where the reply ends, or null while it is incomplete. */
function readChunked(data: Buffer, start: number): { text: string; end: number } | null {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at, 'latin1');
    if (lineEnd < 0) return null;
    const size = parseInt(data.toString('latin1', at, lineEnd), 16);
    if (!Number.isFinite(size)) throw new Error(`a chunk size that is not a number at byte ${at}`);
    const chunkStart = lineEnd + 2;
    if (size === 0) {
      // No trailers are sent by the servers measured: the last chunk is followed by an empty line.
      if (data.length < chunkStart + 2) return null;
      return { text: Buffer.concat(parts).toString('utf8'), end: chunkStart + 2 };
    }
    if (data.length < chunkStart + size + 2) return null;
    parts.push(data.subarray(chunkStart, chunkStart + size));
    at = chunkStart + size + 2;
  }
}
