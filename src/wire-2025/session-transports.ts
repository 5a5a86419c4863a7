import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { checkEnvelope } from './envelope-check.js';
import { DEFAULT_SESSION_LIMITS, mediaTypeProblem, type SessionLimits } from './session-limits.js';
import type { TaskServer } from './server.js';

/** One session: its transport, the caller it belongs to, and its requests in flight. */
interface Session {
  transport: StreamableHTTPServerTransport;
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

  constructor(
    private readonly taskServer: TaskServer,
    limits: Partial<SessionLimits> = {},
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

  /** Hands a request (its body already read) to its session, or opens one for an `initialize`. */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, sessionId: string | null, caller: string): Promise<void> {
    const found = sessionId === null ? undefined : this.sessions.get(sessionId);
    if (sessionId !== null && (found === undefined || found.owner !== caller))
      return sendJson(res, 404, jsonRpcError(JSON_RPC_CODES.sessionNotFound, 'Session not found'));
    const problem = req.method === 'POST' ? checkEnvelope(body) : null;
    if (problem !== null) return sendJson(res, 400, { jsonrpc: '2.0', id: problem.id, error: { code: problem.code, message: problem.message } });
    if (found === undefined) return this.open(req, res, body, caller);
    const ids = requestIds(body);
    const duplicate = ids.find((id) => found.inFlight.has(id));
    if (duplicate !== undefined) {
      return sendJson(res, 409, {
        jsonrpc: '2.0',
        id: JSON.parse(duplicate) as unknown,
        error: { code: JSON_RPC_CODES.invalidRequest, message: 'A request with this id is already in flight on this session' },
      });
    }
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
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        opened();
        this.sessions.set(id, { transport, owner: caller, inFlight: new Set(), open: 0, lastSeen: Date.now() });
      },
    });
    this.logErrors(transport);
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.sessions.delete(transport.sessionId);
    };
    try {
      await this.taskServer.createSession().connect(transport);
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
      if ('error' in message && message.error.code !== JSON_RPC_CODES.internalError) {
        const { code, message: reason } = message.error;
        this.taskServer.logger.info({ status: 200, code, reason: reason.slice(0, 300), id: message.id, sessionId: transport.sessionId }, 'request refused');
      }
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
