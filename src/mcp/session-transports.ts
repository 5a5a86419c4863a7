import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { TaskServer } from './task-server.js';

/**
 * The 2025-11-25 sessions of one HTTP endpoint: one SDK Streamable HTTP transport per
 * `initialize`, found again by its `Mcp-Session-Id`.
 */
export class SessionTransports {
  private readonly transports = new Map<string, StreamableHTTPServerTransport>();

  constructor(private readonly taskServer: TaskServer) {}

  /** Whether `sessionId` names a session of this endpoint. */
  has(sessionId: string): boolean {
    return this.transports.has(sessionId);
  }

  /** Hands a request (its body already read) to its session, or opens one for an `initialize`. */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, sessionId: string | null): Promise<void> {
    let transport = sessionId === null ? undefined : this.transports.get(sessionId);
    if (transport === undefined) {
      if (sessionId !== null) return sendJson(res, 404, jsonRpcError(-32001, 'Session not found'));
      if (req.method !== 'POST' || !isInitializeRequest(body))
        return sendJson(res, 400, jsonRpcError(-32000, 'Bad Request: no session; send initialize first'));
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void this.transports.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) this.transports.delete(created.sessionId);
      };
      await this.taskServer.createSession().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.transports.values()].map((t) => t.close()));
  }
}

function jsonRpcError(code: number, message: string): unknown {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
