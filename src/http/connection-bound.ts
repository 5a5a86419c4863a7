import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { TasklatchError } from '../core/errors.js';
import type { Socket } from 'node:net';

/** How long an HTTP endpoint lets a connection take, and how many it keeps open (`startHttpServer` options). */
export interface ConnectionLimits {
  /**
   * Open connections. At the bound a new connection closes the oldest one with no request in
   * flight (a kept-alive connection between requests, or one still sending its headers) and
   * takes its place; when every open connection has a request in flight (a held `tasks/result`,
   * an SSE stream, a subscription), the new one is closed at once.
   */
  maxConnections: number;
  /** Time a request's headers may take to arrive, from its first byte (ms); then 408 and the connection closes. */
  headersTimeoutMs: number;
  /**
   * Time a whole request (headers and body) may take to arrive (ms); then 408 and the connection
   * closes. A request once received is not bound by it: a response may stream for as long as it
   * needs.
   */
  requestTimeoutMs: number;
  /** Time a kept-alive connection waits for its next request (ms). */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 16_384,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // Longer than the usual client idle timeouts: a server that closes a kept-alive connection
  // first makes the client's next request on it fail with ECONNRESET.
  keepAliveTimeoutMs: 65_000,
};

/**
 * How often node checks the header and request deadlines (node's default is 30 s: a deadline of
 * 10 s would hold a connection for up to 40). A quarter of the header time, at most a second.
 */
export function checkingIntervalMs(limits: ConnectionLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)));
}

/** The limits given over the defaults; throws `INVALID_INPUT` naming the option for one node would refuse. */
export function connectionLimitsOf(given: Partial<ConnectionLimits>): ConnectionLimits {
  const limits = Object.assign({}, DEFAULT_CONNECTION_LIMITS, given);
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new TasklatchError('INVALID_INPUT', `${name} must be a whole number of at least 1, not ${String(value)}`);
  }
  // node refuses a header time longer than the request time.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new TasklatchError(
      'INVALID_INPUT',
      `headersTimeoutMs (${limits.headersTimeoutMs}) must not be longer than requestTimeoutMs (${limits.requestTimeoutMs})`,
    );
  }
  return limits;
}

/** What the bound has done, for a log line: connections closed to make room, new ones refused. */
export interface ConnectionCounts {
  open: number;
  evicted: number;
  refused: number;
}

/**
 * Holds `server` to `maxConnections` open connections. Node's own `server.maxConnections` only
 * refuses: a few hundred sockets that connect and then send nothing (or a byte now and then)
 * would keep every client out until the header time ends. Here such a socket is the first to go
 * when a new client connects, while a connection with a request in flight is never closed for
 * another. `onRefused` is told of each connection refused (every connection has a request in flight).
 */
export function boundConnections(server: Server, maxConnections: number, onRefused: (counts: ConnectionCounts) => void): () => ConnectionCounts {
  /** Open connections, oldest first (a Map keeps insertion order), with their requests in flight. */
  const open = new Map<Socket, { inFlight: number }>();
  let evicted = 0;
  let refused = 0;
  const counts = (): ConnectionCounts => ({ open: open.size, evicted, refused });
  server.on('connection', (socket: Socket) => {
    if (open.size >= maxConnections && !evictIdle()) {
      refused++;
      socket.destroy();
      onRefused(counts());
      return;
    }
    open.set(socket, { inFlight: 0 });
    socket.once('close', () => open.delete(socket));
  });
  // One function for every response, not a closure per request: the request path makes nothing
  // of its own for the bound (what it allocates per request is what a poll costs).
  function ended(this: ServerResponse): void {
    const state = open.get(this.req.socket);
    if (state !== undefined) state.inFlight--;
  }
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = open.get(req.socket);
    if (state === undefined) return;
    state.inFlight++;
    res.on('close', ended);
  });
  const evictIdle = (): boolean => {
    for (const [socket, state] of open) {
      if (state.inFlight > 0) continue;
      open.delete(socket);
      socket.destroy();
      evicted++;
      return true;
    }
    return false;
  };
  return counts;
}
