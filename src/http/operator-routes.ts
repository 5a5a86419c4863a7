import { headerBearsToken } from '../core/bearer.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readiness } from '../runtime/readiness.js';

/** What the operator's endpoints read: the metrics exposition (optional) and the readiness checks. */
export interface OperatorEndpoints {
  metrics?: () => Promise<{ contentType: string; body: string }>;
  /** When set, `/metrics` answers only a request bearing this token (`Authorization: Bearer …`), else 401. */
  metricsToken?: string;
  /** What `/metrics` answers (404) when `metrics` is absent. */
  metricsElsewhere?: string;
  readiness: () => Promise<Readiness>;
}

/** Answers a request on another path than `/mcp`; true when it was one of these. */
export type ExtraRoute = (req: IncomingMessage, res: ServerResponse, pathname: string) => Promise<boolean>;

/**
 * `GET /healthz` (the process answers: 200), `GET /readyz` (200 when every check passes, else
 * 503 with the checks and the reason, as JSON) and `GET /metrics` (Prometheus text). No MCP
 * bearer token: probes and scrapers carry none, and nothing here names a tenant or a task. The
 * metrics still tell an outsider the tools and the load, so they may ask for a token of their own.
 */
export function operatorRoutes(endpoints: OperatorEndpoints): ExtraRoute {
  return async (req, res, pathname) => {
    if (pathname !== '/healthz' && pathname !== '/readyz' && pathname !== '/metrics') return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end(JSON.stringify({ error: 'method not allowed' }));
      return true;
    }
    if (pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
    } else if (pathname === '/readyz') {
      const readiness = await endpoints.readiness();
      res.writeHead(readiness.ready ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(readiness));
    } else if (endpoints.metrics === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: endpoints.metricsElsewhere ?? 'metrics are off' }));
    } else if (endpoints.metricsToken !== undefined && !bearsToken(req, endpoints.metricsToken)) {
      res
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
        .end(JSON.stringify({ error: 'unauthorized: /metrics needs its token' }));
    } else {
      const { contentType, body } = await endpoints.metrics();
      res.writeHead(200, { 'content-type': contentType }).end(body);
    }
    return true;
  };
}

/** Whether the request bears `token`, compared in constant time (`headerBearsToken`). */
export function bearsToken(req: IncomingMessage, token: string): boolean {
  return headerBearsToken(req.headers.authorization, token);
}
