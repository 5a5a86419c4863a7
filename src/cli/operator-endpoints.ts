import { TasklatchError } from '../core/errors.js';
import { operatorRoutes, type ExtraRoute } from '../http/operator-routes.js';
import { startOperatorServer, type RunningOperatorServer } from '../http/operator-server.js';
import { TaskMetrics } from '../metrics/task-metrics.js';
import { checkReadiness } from '../runtime/readiness.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';

/** The operator's routes of one runtime (`/healthz`, `/readyz`, `/metrics`) and its metrics. */
export function operatorEndpointsFor(runtime: TaskRuntime): { route: ExtraRoute; close(): void } {
  const metrics = new TaskMetrics(runtime.service);
  const route = operatorRoutes({ metrics: () => metrics.render(), readiness: () => checkReadiness(runtime.service) });
  return { route, close: () => metrics.close() };
}

/** `--metrics HOST:PORT` of `tasklatch worker`: the operator's routes on a port of their own. */
export async function serveOperatorEndpoints(runtime: TaskRuntime, listen: string): Promise<RunningOperatorServer> {
  const { host, port } = parseHostPort('--metrics', listen);
  const endpoints = operatorEndpointsFor(runtime);
  const server = await startOperatorServer(endpoints.route, host, port, (error) => runtime.logger.error({ err: error }, 'operator endpoint failed'));
  return {
    url: server.url,
    close: async () => {
      endpoints.close();
      await server.close();
    },
  };
}

/** `[HOST:]PORT`; the host defaults to 127.0.0.1 (a bracketed IPv6 host is unbracketed). */
export function parseHostPort(flag: string, text: string): { host: string; port: number } {
  const match = /^(?:(.+):)?(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port > 65535) throw new TasklatchError('INVALID_INPUT', `${flag} takes [HOST:]PORT, got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1'), port };
}
