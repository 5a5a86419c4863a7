import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { TasklatchError } from '../core/errors.js';
import { operatorRoutes, type ExtraRoute } from '../http/operator-routes.js';
import { consoleRoute } from '../console/console-route.js';
import { eventRoute } from '../http/event-route.js';
import { sendEvent } from '../runtime/requests/send-event.js';
import { startOperatorServer, type RunningOperatorServer } from '../http/operator-server.js';
import { TaskMetrics } from '../metrics/task-metrics.js';
import { checkReadiness } from '../runtime/readiness.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';

export interface OperatorOptions {
  /** False: `/metrics` answers 404 naming where they are (`serve --metrics` moved them). Default true. */
  metrics?: boolean;
  /** `/metrics` answers only a request bearing this token. */
  metricsToken?: string | undefined;
}

/** The operator's routes of one runtime (`/healthz`, `/readyz`, `/metrics`) and its metrics. */
export function operatorEndpointsFor(runtime: TaskRuntime, options: OperatorOptions = {}): { route: ExtraRoute; close(): void } {
  const readiness = () => checkReadiness(runtime.guard);
  if (options.metrics === false) {
    return { route: operatorRoutes({ readiness, metricsElsewhere: 'metrics are served on their own listener (--metrics)' }), close: () => undefined };
  }
  const metrics = new TaskMetrics(runtime.guard.context);
  const route = operatorRoutes({
    metrics: () => metrics.render(),
    readiness,
    ...(options.metricsToken === undefined ? {} : { metricsToken: options.metricsToken }),
  });
  return { route, close: () => metrics.close() };
}

/**
 * `--metrics HOST:PORT` of `tasklatch worker` and `serve`: the operator's routes on a port of their
 * own, `POST /events` (an operator's send, behind the same token; `eventRoute`) and the web
 * console under `/console` (`consoleRoute`, behind the same token).
 */
export async function serveOperatorEndpoints(runtime: TaskRuntime, listen: string, options: OperatorOptions = {}): Promise<RunningOperatorServer> {
  const { host, port } = parseHostPort('--metrics', listen);
  const endpoints = operatorEndpointsFor(runtime, options);
  const events = eventRoute(
    (request) => sendEvent(runtime, null, Object.assign({ correlationId: `operator:${randomUUID()}` }, request)),
    options.metricsToken,
    runtime.limits.maxEventBytes + 16 * 1024,
  );
  const pages = consoleRoute({ store: runtime.guard.context.store, requestor: runtime.guard.requestor, token: options.metricsToken });
  const route: ExtraRoute = async (req, res, pathname) =>
    (await events(req, res, pathname)) || (await pages(req, res, pathname)) || endpoints.route(req, res, pathname);
  const server = await startOperatorServer(route, host, port, (error) => runtime.logger.error({ err: error }, 'operator endpoint failed'));
  return {
    url: server.url,
    close: async () => {
      endpoints.close();
      await server.close();
    },
  };
}

/**
 * The token of `/metrics`: `--metrics-token-file FILE` (its content, trimmed), else
 * `TASKLATCH_METRICS_TOKEN`; undefined when neither is set. A file kept out of the command line
 * keeps the token out of `ps`.
 */
export async function metricsTokenFrom(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  let token: string;
  if (file !== undefined) {
    try {
      token = (await readFile(file, 'utf8')).trim();
    } catch (error) {
      throw new TasklatchError('INVALID_INPUT', `--metrics-token-file ${file}: ${(error as Error).message}`);
    }
    if (token === '') throw new TasklatchError('INVALID_INPUT', `--metrics-token-file ${file} is empty`);
  } else {
    const fromEnv = env.TASKLATCH_METRICS_TOKEN;
    if (fromEnv === undefined || fromEnv.trim() === '') return undefined;
    token = fromEnv.trim();
  }
  if (/\s/.test(token)) throw new TasklatchError('INVALID_INPUT', 'the metrics token has whitespace inside: a bearer token cannot carry it');
  return token;
}

/** `[HOST:]PORT`; the host defaults to 127.0.0.1 (a bracketed IPv6 host is unbracketed). */
export function parseHostPort(flag: string, text: string): { host: string; port: number } {
  const match = /^(?:(.+):)?(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port > 65535) throw new TasklatchError('INVALID_INPUT', `${flag} takes [HOST:]PORT, got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1'), port };
}
