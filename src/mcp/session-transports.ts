import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { TaskServer } from './task-server.js';

/** One session: its transport, the caller it belongs to, and its requests in flight. */
interface Session {
  transport: StreamableHTTPServerTransport;
  /** The auth key of the caller whose `initialize` opened it. */
  owner: string;
  /** JSON-RPC ids of requests not yet answered: a second request with one of them is refused. */
  inFlight: Set<string>;
}

/**
 * The 2025-11-25 sessions of one HTTP endpoint: one SDK Streamable HTTP transport per
 * `initialize`, found again by its `Mcp-Session-Id` — and only by the caller who opened it.
 * Another caller's request on it answers exactly as for an unknown session, so a session id
 * seen in transit gives no access to its stream, its requests or its results.
 */
export class SessionTransports {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly taskServer: TaskServer) {}

  /** Whether `sessionId` names a session of this endpoint. */
  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** Hands a request (its body already read) to its session, or opens one for an `initialize`. */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, sessionId: string | null, caller: string): Promise<void> {
    const found = sessionId === null ? undefined : this.sessions.get(sessionId);
    if (sessionId !== null && (found === undefined || found.owner !== caller)) return sendJson(res, 404, jsonRpcError(-32001, 'Session not found'));
    if (found === undefined) return this.open(req, res, body, caller);
    const ids = requestIds(body);
    const duplicate = ids.find((id) => found.inFlight.has(id));
    if (duplicate !== undefined) {
      return sendJson(res, 409, {
        jsonrpc: '2.0',
        id: JSON.parse(duplicate) as unknown,
        error: { code: -32600, message: 'A request with this id is already in flight on this session' },
      });
    }
    for (const id of ids) found.inFlight.add(id);
    res.once('close', () => ids.forEach((id) => found.inFlight.delete(id)));
    await found.transport.handleRequest(req, res, body);
  }

  private async open(req: IncomingMessage, res: ServerResponse, body: unknown, caller: string): Promise<void> {
    if (req.method !== 'POST' || !isInitializeRequest(body)) return sendJson(res, 400, jsonRpcError(-32000, 'Bad Request: no session; send initialize first'));
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void this.sessions.set(id, { transport, owner: caller, inFlight: new Set() }),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.sessions.delete(transport.sessionId);
    };
    await this.taskServer.createSession().connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.sessions.values()].map((s) => s.transport.close()));
  }
}

/** The ids of the JSON-RPC requests in a body (notifications and responses have none that count), as JSON text. */
function requestIds(body: unknown): string[] {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages
    .filter((m): m is { id: unknown; method: unknown } => typeof m === 'object' && m !== null && 'method' in m && 'id' in m)
    .map((m) => JSON.stringify(m.id));
}

function jsonRpcError(code: number, message: string): unknown {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
