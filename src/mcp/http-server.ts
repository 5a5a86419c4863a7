import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { TaskServer } from './task-server.js';
import { authKeyOf, type Principal } from '../tools/principal.js';

export interface HttpOptions {
  host: string;
  port: number;
  /** Bearer token → principal. When set, a request without a known token gets 401. */
  tokens?: ReadonlyMap<string, Principal>;
  /** Largest request body accepted (bytes). */
  maxBodyBytes?: number;
}

export interface RunningHttp {
  /** The Streamable HTTP endpoint, e.g. http://127.0.0.1:3000/mcp. */
  url: string;
  close(): Promise<void>;
}

const MCP_PATH = '/mcp';

/**
 * Serves a TaskServer over Streamable HTTP at `/mcp`: one SDK session per `initialize`, bearer
 * tokens checked before the transport sees the request. Every instance on one shared store
 * answers for every task, so a client may talk to any of them.
 */
export async function startHttpServer(taskServer: TaskServer, options: HttpOptions): Promise<RunningHttp> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== MCP_PATH) return sendJson(res, 404, { error: `not found; the MCP endpoint is ${MCP_PATH}` });
    const principal = authenticate(req, options.tokens);
    if (principal === 'denied') {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return sendJson(res, 401, { error: 'unauthorized: a known bearer token is required' });
    }
    if (principal !== null) {
      (req as IncomingMessage & { auth?: unknown }).auth = { token: bearer(req) ?? '', clientId: authKeyOf(principal), scopes: [], extra: { principal } };
    }
    const body = req.method === 'POST' ? await readJson(req, maxBody) : undefined;
    if (body instanceof Error) return sendJson(res, body.message === 'too large' ? 413 : 400, jsonRpcError(-32700, `Parse error: ${body.message}`));
    const sessionId = header(req, 'mcp-session-id');
    let transport = sessionId === null ? undefined : transports.get(sessionId);
    if (transport === undefined) {
      if (sessionId !== null) return sendJson(res, 404, jsonRpcError(-32001, 'Session not found'));
      if (req.method !== 'POST' || !isInitializeRequest(body))
        return sendJson(res, 400, jsonRpcError(-32000, 'Bad Request: no session; send initialize first'));
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) transports.delete(created.sessionId);
      };
      await taskServer.createSession().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      taskServer.logger.error({ err: error }, 'HTTP request failed');
      if (!res.headersSent) sendJson(res, 500, jsonRpcError(-32603, 'Internal error'));
      else res.end();
    });
  });
  // Longer than the usual client idle timeouts: a server that closes a kept-alive connection
  // first makes the client's next request on it fail with ECONNRESET.
  http.keepAliveTimeout = 65_000;
  http.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const address = http.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}${MCP_PATH}`,
    close: async () => {
      await Promise.allSettled([...transports.values()].map((t) => t.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function authenticate(req: IncomingMessage, tokens: ReadonlyMap<string, Principal> | undefined): Principal | null | 'denied' {
  if (tokens === undefined) return null;
  const token = bearer(req);
  return (token === null ? undefined : tokens.get(token)) ?? 'denied';
}

function bearer(req: IncomingMessage): string | null {
  const value = header(req, 'authorization');
  const match = value === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1] ?? null;
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return new Error('too large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (error) {
    return new Error((error as Error).message);
  }
}

function jsonRpcError(code: number, message: string): unknown {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
