import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { checkEnvelope } from './envelope-check.js';
import type { ReadCall } from './methods.js';
import type { SessionContext } from './session.js';
import { answerRead, logRefused, plainRead, sendEvent, type SessionRead } from './session-reads.js';
import { DEFAULT_SESSION_LIMITS, mediaTypeProblem, type SessionLimits } from './session-limits.js';
import type { TaskServer } from './server.js';

/** One session: its transport, the caller it belongs to, and its requests in flight. */
interface Session {
  transport: StreamableHTTPServerTransport;
  /** The session's state in the task server: its plain reads are answered with it. */
  context: SessionContext;
  /** The auth key of the caller whose `initialize` opened it. */
  owner: string;
  /** JSON-RPC ids of requests not yet answered: a second request with one of them is refused. */
  inFlight: Set<string>;
  /** HTTP responses of this session still open (held results, the notification stream). */
  open: number;
  /** When the session last had a request or an open response (epoch ms). */
  lastSeen: number;
}

/**
 * The 2025-11-25 sessions of one HTTP endpoint: one SDK Streamable HTTP transport per
 * `initialize`, found again by its `Mcp-Session-Id` — and only by the caller who opened it.
 * Another caller's request on it answers exactly as for an unknown session, so a session id
 * seen in transit gives no access to its stream, its requests or its results. Sessions are
 * capped (in all and per caller) and closed after an idle time; nothing is built for a request
 * refused before its session exists.
 */
export class SessionTransports {
  private readonly sessions = new Map<string, Session>();
  /** `initialize` requests between the cap check and their session's id, per caller: they count against the caps. */
  private readonly opening = new Map<string, number>();
  private readonly limits: SessionLimits;
  private readonly sweep: NodeJS.Timeout;

  /**
   * `plainReads` false: every request goes through the SDK transport, plain reads too (the
   * reference their answers off the transport are held to).
   */
  constructor(
    private readonly taskServer: TaskServer,
    limits: Partial<SessionLimits> = {},
    private readonly plainReads = true,
  ) {
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...limits };
    this.sweep = setInterval(() => void this.closeIdle(), Math.max(10, Math.min(this.limits.idleMs / 2, 60_000)));
    this.sweep.unref();
  }

  /** Whether `sessionId` names a session of this endpoint. */
  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** Open sessions (the cap's count). */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * Hands a request (its body already read) to its session, or opens one for an `initialize`. A
   * plain read of an established session (`plainRead`) is answered here, by the handler its SDK
   * `Server` would run and in the bytes its transport would write; anything else goes through
   * the transport.
   */
  async handle(req: IncomingMessage, res: ClientResponse, body: unknown, sessionId: string | null, caller: string): Promise<void> {
    const found = sessionId === null ? undefined : this.sessions.get(sessionId);
    if (sessionId !== null && (found === undefined || found.owner !== caller))
      return sendJson(res, 404, jsonRpcError(JSON_RPC_CODES.sessionNotFound, 'Session not found'));
    const read = found === undefined || sessionId === null || !this.plainReads ? null : plainRead(req.method, req.headers, body, this.taskServer.capabilities);
    if (read !== null && found !== undefined && sessionId !== null) return this.serveRead(found, sessionId, req, res, read);
    const problem = req.method === 'POST' ? checkEnvelope(body) : null;
    if (problem !== null) return sendJson(res, 400, { jsonrpc: '2.0', id: problem.id, error: { code: problem.code, message: problem.message } });
    if (found === undefined) return this.open(req, res, body, caller);
    const ids = requestIds(body);
    const duplicate = ids.find((id) => found.inFlight.has(id));
    if (duplicate !== undefined) return inFlightAlready(res, duplicate);
    for (const id of ids) found.inFlight.add(id);
    found.open += 1;
    found.lastSeen = Date.now();
    res.once('close', () => {
      found.open -= 1;
      found.lastSeen = Date.now();
      // A client that went away before its answer cancels what it asked, as
      // notifications/cancelled would: a held tasks/result stops reading the store.
      const gone = !res.writableFinished;
      for (const id of ids) {
        if (!found.inFlight.delete(id) || !gone) continue;
        const cancel: JSONRPCMessage = {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: JSON.parse(id) as string, reason: 'client went away' },
        };
        found.transport.onmessage?.(cancel);
      }
    });
    await found.transport.handleRequest(req, res, body);
  }

  /**
   * A plain read, served as the session's SDK path would serve it: the same in-flight and idle
   * bookkeeping, the same handler, the same reply. A session closed while it was served answers
   * an empty stream, as its transport's closed stream does.
   */
  private async serveRead(found: Session, sessionId: string, req: IncomingMessage, res: ClientResponse, read: SessionRead): Promise<void> {
    const key = JSON.stringify(read.id);
    if (found.inFlight.has(key)) return inFlightAlready(res, key);
    found.inFlight.add(key);
    found.open += 1;
    found.lastSeen = Date.now();
    let message;
    try {
      message = await answerRead(found.context, read, new ResponseCall(req, res), sessionId);
    } finally {
      found.inFlight.delete(key);
      found.open -= 1;
      found.lastSeen = Date.now();
    }
    if (this.sessions.get(sessionId) !== found) return sendEvent(res, sessionId, null);
    logRefused(this.taskServer.logger, message, sessionId);
    sendEvent(res, sessionId, message);
  }

  private async open(req: IncomingMessage, res: ServerResponse, body: unknown, caller: string): Promise<void> {
    if (req.method !== 'POST' || !isInitializeRequest(body))
      return sendJson(res, 400, jsonRpcError(JSON_RPC_CODES.serverError, 'Bad Request: no session; send initialize first'));
    // What the transport would refuse is refused before it exists: a refused initialize leaves nothing behind.
    const media = mediaTypeProblem(req.headers);
    if (media !== null) return sendJson(res, media.status, jsonRpcError(JSON_RPC_CODES.serverError, media.message));
    const pending = [...this.opening.values()].reduce((sum, n) => sum + n, 0);
    const mine = [...this.sessions.values()].filter((s) => s.owner === caller).length + (this.opening.get(caller) ?? 0);
    if (mine >= this.limits.maxPerCaller) {
      return sendJson(
        res,
        429,
        jsonRpcError(JSON_RPC_CODES.serverError, `Too many open sessions for this caller: at most ${this.limits.maxPerCaller}; close one (DELETE) first`),
      );
    }
    if (this.sessions.size + pending >= this.limits.maxSessions) {
      res.setHeader('Retry-After', '60');
      return sendJson(res, 503, jsonRpcError(JSON_RPC_CODES.serverError, `Too many open sessions: at most ${this.limits.maxSessions}; retry later`));
    }
    const opened = () => {
      const left = (this.opening.get(caller) ?? 1) - 1;
      if (left > 0) this.opening.set(caller, left);
      else this.opening.delete(caller);
    };
    this.opening.set(caller, (this.opening.get(caller) ?? 0) + 1);
    const server = this.taskServer.createSession();
    const context = this.taskServer.sessionOf(server);
    if (context === undefined) throw new Error('a session the task server does not hold');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        opened();
        this.sessions.set(id, { transport, context, owner: caller, inFlight: new Set(), open: 0, lastSeen: Date.now() });
      },
    });
    this.logErrors(transport);
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.sessions.delete(transport.sessionId);
    };
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      // Refused by the transport after all: its server and transport are closed and freed.
      if (transport.sessionId === undefined) {
        opened();
        await transport.close();
      }
    }
  }

  /**
   * One log line per request refused inside its session (a JSON-RPC error in a 200 answer, where
   * the HTTP layer sees only the status). An internal error is logged, with its stack, where it arises.
   */
  private logErrors(transport: StreamableHTTPServerTransport): void {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      logRefused(this.taskServer.logger, message, transport.sessionId);
      return send(message, options);
    };
  }

  /** Closes sessions with no open response and no request for the idle time. */
  private async closeIdle(): Promise<void> {
    const before = Date.now() - this.limits.idleMs;
    const idle = [...this.sessions.values()].filter((s) => s.open === 0 && s.lastSeen <= before);
    await Promise.allSettled(idle.map((s) => s.transport.close()));
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.allSettled([...this.sessions.values()].map((s) => s.transport.close()));
  }
}

/**
 * The HTTP response of a request: the endpoint's responses (`RefusalLoggingResponse`) say when
 * their client went away (`clientGone`); a plain `ServerResponse` is watched for it here.
 */
type ClientResponse = ServerResponse & { readonly clientGone?: AbortSignal };

/**
 * What a read is asked with: the request's auth info (`req.auth`, as the SDK transport hands it
 * on) and a signal that fires when the client goes away, made only when a read looks at it.
 */
class ResponseCall implements ReadCall {
  readonly authInfo: ReadCall['authInfo'];

  constructor(
    req: IncomingMessage,
    private readonly res: ClientResponse,
  ) {
    this.authInfo = (req as IncomingMessage & { auth?: ReadCall['authInfo'] }).auth;
  }

  get signal(): AbortSignal {
    if (this.res.clientGone !== undefined) return this.res.clientGone;
    const gone = new AbortController();
    this.res.once('close', () => {
      if (!this.res.writableFinished) gone.abort();
    });
    return gone.signal;
  }
}

function inFlightAlready(res: ServerResponse, id: string): void {
  sendJson(res, 409, {
    jsonrpc: '2.0',
    id: JSON.parse(id) as unknown,
    error: { code: JSON_RPC_CODES.invalidRequest, message: 'A request with this id is already in flight on this session' },
  });
}

/** The id of the JSON-RPC request in a body (a notification or a response has none that counts), as JSON text. */
function requestIds(body: unknown): string[] {
  // One message per POST: `checkEnvelope` refused a batch before this.
  const m = body as { id?: unknown; method?: unknown } | null;
  return typeof m === 'object' && m !== null && 'method' in m && 'id' in m ? [JSON.stringify(m.id)] : [];
}

function jsonRpcError(code: number, message: string): unknown {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
