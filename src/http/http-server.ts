import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TasklatchError } from '../core/errors.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import type { SessionLimits } from '../wire-2025/session-limits.js';
import { SessionTransports } from '../wire-2025/session-transports.js';
import { createTaskServer, type TaskServer } from '../wire-2025/server.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import { StatelessServer } from '../wire-2026/server.js';
import { ANONYMOUS, authKeyOf, type Principal } from '../tools/principal.js';
import { authFront, type HttpAuthenticate } from './auth-front.js';
import { boundConnections, checkingIntervalMs, connectionLimitsOf, type ConnectionLimits } from './connection-bound.js';
import { createOAuthResource, type OAuthResourceOptions } from './oauth/oauth-resource.js';
import { checkHostAndOrigin, loopbackHosts } from './host-check.js';
import type { ExtraRoute } from './operator-routes.js';
import { readBody } from './read-body.js';
import { RefusalLoggingResponse } from './refusal-log.js';
import { isModernRequest } from './route.js';
import { serveStateless } from './stateless-dispatch.js';

/** The protocol generations one endpoint can serve: the 2025-11-25 sessions and the stateless 2026-07-28 wire. */
export const PROTOCOL_GENERATIONS = ['2025-11-25', '2026-07-28'] as const;
export type ProtocolGeneration = (typeof PROTOCOL_GENERATIONS)[number];

export interface HttpOptions {
  /** The runtime both wires serve (its service, tools and workers); started and closed by the caller. */
  runtime: TaskRuntime;
  /**
   * The 2025-11-25 wire, when the caller built it over `runtime` (its own `authenticate`, or
   * sessions it also serves elsewhere); closed by the caller. Default: one built here over
   * `runtime`, whose callers are the principals this endpoint authenticates, closed with it.
   */
  taskServer?: TaskServer;
  /**
   * The generations served (default both). A request of another one is answered HTTP 400 with
   * `JSON_RPC_CODES.unsupportedVersion` naming those served, and nothing of its wire is built:
   * `['2026-07-28']` holds no sessions at all.
   */
  generations?: readonly ProtocolGeneration[];
  /** The name and version both wires announce (default: the task server's, else `tasklatch` 0.1.0). */
  name?: string;
  version?: string;
  host: string;
  port: number;
  /** Bearer token → principal. When set, a request without a known token gets 401. */
  tokens?: ReadonlyMap<string, Principal>;
  /**
   * The caller of a request (any scheme: API keys in a database, a header from an mTLS proxy), or
   * null for 401. Awaited before the body is read and before either generation sees the request.
   * An alternative to `tokens`.
   */
  authenticate?: HttpAuthenticate;
  /**
   * This endpoint as an OAuth 2.1 resource server: JWT access tokens of `issuer` for `resource`,
   * protected resource metadata served under `/.well-known/oauth-protected-resource`. An
   * alternative to `tokens` and `authenticate`.
   */
  oauth?: OAuthResourceOptions;
  /**
   * Connections the kernel queues for this server before it drops more (default `LISTEN_BACKLOG`;
   * the OS caps it at its own limit, `net.core.somaxconn` on Linux).
   */
  backlog?: number;
  /** Largest request body accepted (bytes, default 4 MiB); a larger one answers 413 and the connection closes. */
  maxBodyBytes?: number;
  /** 2025-11-25 sessions: the cap in all and per caller, and the idle time after which one closes. */
  sessions?: Partial<SessionLimits>;
  /**
   * Open connections and the time a request's headers, a whole request and a kept-alive
   * connection's wait may take (`DEFAULT_CONNECTION_LIMITS`): a client that connects and then
   * sends nothing, or a byte now and then, holds its connection no longer than the header time.
   */
  connections?: Partial<ConnectionLimits>;
  /**
   * Host names (`localhost`, `127.0.0.1`, `[::1]`, `mcp.example.com`) accepted in the `Host`
   * and `Origin` headers; anything else is refused with 403 (DNS rebinding). Default: the
   * loopback names when the server listens on a loopback address, no check otherwise.
   */
  allowedHosts?: readonly string[];
  /** Paths besides `/mcp` (the operator's `/healthz`, `/readyz`, `/metrics`), tried before the 404. */
  extraRoutes?: ExtraRoute;
}

export interface RunningHttp {
  /** The Streamable HTTP endpoint, e.g. http://127.0.0.1:3000/mcp. */
  url: string;
  /** Open 2025-11-25 sessions. */
  openSessions(): number;
  close(): Promise<void>;
}

const MCP_PATH = '/mcp';

/**
 * The default accept queue: thousands of clients that connect in the same second (a fleet of
 * pollers, or every client of a server that just restarted) fit in it while the server is busy.
 * With node's default (511) 8,000 pollers connecting at once overflowed it 34,642 times, and
 * each dropped connection attempt is retried by the client's kernel only after 1 s, then 3 s
 * and 7 s: polls answered seconds late by a server a third busy.
 */
export const LISTEN_BACKLOG = 4096;

/**
 * One MCP endpoint at `/mcp` over a runtime, for both protocol generations, chosen per request:
 * `initialize` and `Mcp-Session-Id` traffic goes to the 2025-11-25 sessions of the SDK
 * transport; a request that carries the 2026-07-28 per-request `_meta` (or names a newer
 * version in its `MCP-Protocol-Version` header) is served statelessly. Bearer tokens and the
 * Host/Origin check come first for both. Every instance on one shared store answers for every task.
 */
export async function startHttpServer(options: HttpOptions): Promise<RunningHttp> {
  const { runtime } = options;
  const generations = servedGenerations(options);
  const identity = {
    name: options.name ?? options.taskServer?.identity.name ?? 'tasklatch',
    version: options.version ?? options.taskServer?.identity.version ?? '0.1.0',
  };
  // Built here: its callers are the principals this front authenticates (`req.auth`), else anonymous.
  const ownServer =
    options.taskServer === undefined && generations.has('2025-11-25')
      ? createTaskServer({ runtime, ...identity, authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null })
      : null;
  const taskServer = options.taskServer ?? ownServer;
  const sessions = generations.has('2025-11-25') && taskServer !== null ? new SessionTransports(taskServer, options.sessions) : null;
  const stateless = generations.has('2026-07-28') ? new StatelessServer(runtime, identity) : null;
  const logger = runtime.logger;
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const allowedHosts = options.allowedHosts ?? loopbackHosts(options.host);
  const oauth = options.oauth === undefined ? undefined : createOAuthResource(options.oauth);
  const checkAuth = authFront({ tokens: options.tokens, authenticate: options.authenticate, bearer: oauth });
  const connections = connectionLimitsOf(options.connections ?? {});

  const handle = async (req: IncomingMessage, res: RefusalLoggingResponse): Promise<void> => {
    res.watch(logger);
    const path = pathOf(req.url);
    if (path !== MCP_PATH) {
      // The extra routes answer only past the Host/Origin check (DNS rebinding), but need no token.
      const hostOk = allowedHosts === null || checkHostAndOrigin(req.headers, allowedHosts);
      if (hostOk && oauth?.serveMetadata(req, res, path) === true) return;
      if (hostOk && (await options.extraRoutes?.(req, res, path)) === true) return;
      answeredEarly(req, res);
      return sendJson(res, 404, { error: `not found; the MCP endpoint is ${MCP_PATH}` });
    }
    if (allowedHosts !== null && !checkHostAndOrigin(req.headers, allowedHosts)) {
      answeredEarly(req, res);
      return sendJson(res, 403, { jsonrpc: '2.0', error: { code: JSON_RPC_CODES.invalidRequest, message: 'Forbidden: Host or Origin not allowed' } });
    }
    const auth = await checkAuth(req);
    if (auth.kind === 'unavailable') {
      answeredEarly(req, res);
      logger.warn({ err: auth.cause }, 'authorization server unreachable; request not authenticated');
      res.setHeader('retry-after', String(auth.retryAfterSeconds));
      return sendJson(res, 503, { jsonrpc: '2.0', error: { code: JSON_RPC_CODES.serverError, message: 'Authorization server unavailable; retry later' } });
    }
    if (auth.kind === 'refused') {
      answeredEarly(req, res);
      res.setHeader('WWW-Authenticate', auth.challenge);
      return sendJson(res, auth.status, { error: auth.error, error_description: auth.description });
    }
    const principal = auth.kind === 'admitted' ? auth.principal : null;
    const read = req.method === 'POST' ? await readBody(req, maxBody) : { kind: 'none' as const };
    if (read.kind === 'gone') return;
    if (read.kind === 'too large') {
      res.setHeader('connection', 'close');
      return sendJson(res, 413, {
        jsonrpc: '2.0',
        id: null,
        error: { code: JSON_RPC_CODES.serverError, message: `Request body too large: at most ${maxBody} bytes` },
      });
    }
    const body = read.kind === 'json' ? read.value : undefined;
    res.requestBody = body;
    const sessionId = header(req, 'mcp-session-id');
    const modern = sessionId === null && isModernRequest(req.headers, body);
    if (read.kind === 'not json') {
      const error = { jsonrpc: '2.0', error: { code: JSON_RPC_CODES.parseError, message: `Parse error: ${read.message}` } };
      return sendJson(res, 400, modern ? error : Object.assign({}, error, { id: null }));
    }
    if (!modern && sessions !== null) {
      // The SDK's transport hands `req.auth` to the 2025-11-25 server as its `authInfo`.
      if (auth.kind === 'admitted') {
        (req as IncomingMessage & { auth?: unknown }).auth = {
          token: auth.token,
          clientId: authKeyOf(auth.principal),
          scopes: auth.scopes,
          extra: { principal },
        };
      }
      return sessions.handle(req, res, body, sessionId, authKeyOf(principal ?? ANONYMOUS));
    }
    if (modern && stateless !== null) return serveStateless(stateless, req, res, body, principal ?? ANONYMOUS);
    return sendJson(res, 400, {
      jsonrpc: '2.0',
      id: readableId(body),
      error: {
        code: JSON_RPC_CODES.unsupportedVersion,
        message: `Unsupported protocol version: this endpoint serves ${[...generations].join(' and ')}`,
        data: { supported: [...generations] },
      },
    });
  };

  const http = createServer(
    {
      ServerResponse: RefusalLoggingResponse,
      headersTimeout: connections.headersTimeoutMs,
      requestTimeout: connections.requestTimeoutMs,
      keepAliveTimeout: connections.keepAliveTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(connections),
    },
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        logger.error({ err: error }, 'HTTP request failed');
        if (!res.headersSent) sendJson(res, 500, { jsonrpc: '2.0', error: { code: JSON_RPC_CODES.internalError, message: 'Internal error' } });
        else res.end();
      });
    },
  );
  // One line at most every 10 s while connections are refused: a flood must not flood the log too.
  let lastRefusalLog = 0;
  boundConnections(http, connections.maxConnections, (counts) => {
    if (Date.now() - lastRefusalLog < 10_000) return;
    lastRefusalLog = Date.now();
    logger.warn({ maxConnections: connections.maxConnections, ...counts }, 'connection refused: every open connection has a request in flight');
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen({ port: options.port, host: options.host, backlog: options.backlog ?? LISTEN_BACKLOG }, () => resolve());
  });
  const address = http.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}${MCP_PATH}`,
    openSessions: () => sessions?.size ?? 0,
    close: async () => {
      await sessions?.close();
      await ownServer?.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** The generations an endpoint serves, checked: a known one at least, and a task server over the same runtime. */
function servedGenerations(options: HttpOptions): ReadonlySet<ProtocolGeneration> {
  const given = options.generations ?? PROTOCOL_GENERATIONS;
  const unknown = given.filter((g) => !(PROTOCOL_GENERATIONS as readonly string[]).includes(g));
  if (given.length === 0 || unknown.length > 0) {
    throw new TasklatchError('INVALID_INPUT', `generations must name one or both of ${PROTOCOL_GENERATIONS.join(', ')}; got ${JSON.stringify(given)}`);
  }
  if (options.taskServer !== undefined && options.taskServer.runtime !== options.runtime) {
    throw new TasklatchError('INVALID_INPUT', 'taskServer must serve the runtime given as runtime');
  }
  return new Set(given);
}

/**
 * An answer given before the body is read closes the connection: the client stops uploading at
 * once, and the server reads no more of it.
 */
function answeredEarly(req: IncomingMessage, res: ServerResponse): void {
  if (!req.complete) res.setHeader('connection', 'close');
}

/** The id of a JSON-RPC request body, when it has one JSON-RPC allows; null otherwise. */
function readableId(body: unknown): string | number | null {
  const id = typeof body === 'object' && body !== null ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/** The path of a request target: the endpoint's own plain form without a URL object, anything else as URL reads it. */
function pathOf(target: string | undefined): string {
  if (target === MCP_PATH || target?.startsWith(`${MCP_PATH}?`) === true) return MCP_PATH;
  return new URL(target ?? '/', 'http://localhost').pathname;
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
