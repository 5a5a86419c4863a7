import { parseArgs } from 'node:util';
import { createLogger } from '../runtime/log.js';
import { createRuntime } from '../runtime/task-runtime.js';
import { describeStoreUrl } from '../store/open-store.js';
import type { CliIo } from './io.js';
import { metricsTokenFrom, parseHostPort, serveOperatorEndpoints } from './operator-endpoints.js';
import { untilStopped } from './until-stopped.js';
import {
  appFrom,
  openCommandStore,
  journalLimitsFrom,
  positiveInt,
  retentionFrom,
  toolsFrom,
  WORKER_ARG_OPTIONS,
  WORKER_USAGE_LINES,
  workerOptionsFrom,
} from './worker-options.js';

export const WORKER_USAGE = `Usage: tasklatch worker [options]

Runs admitted tasks from the store's outbox, beside any number of 'serve --no-workers'
processes and other workers on the same store. SIGTERM drains: no new claims, running tasks
finish (up to --drain-ms), the rest of the leases are given back, then it exits.
${WORKER_USAGE_LINES}
  --drain-ms MS          how long SIGTERM lets running tasks finish (default 10000)
  --metrics [HOST:]PORT  serve GET /metrics (Prometheus), /healthz, /readyz and the web console (/console) there
  --metrics-token-file FILE
                         /metrics and /console answer only 'Authorization: Bearer <the token in FILE>'
                         (else 401; the console also takes it in a form);
                         TASKLATCH_METRICS_TOKEN does the same from the environment`;

export async function workerCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    allowNegative: true,
    options: { ...WORKER_ARG_OPTIONS, 'drain-ms': { type: 'string' }, metrics: { type: 'string' }, 'metrics-token-file': { type: 'string' } },
  });
  if (values.help === true) {
    io.out(WORKER_USAGE);
    return 0;
  }
  const drainMs = values['drain-ms'] === undefined ? 10_000 : positiveInt('--drain-ms', values['drain-ms']);
  if (values.metrics !== undefined) parseHostPort('--metrics', values.metrics);
  const metricsToken = await metricsTokenFrom(values['metrics-token-file']);
  const pollInterval = values['poll-interval'] === undefined ? undefined : positiveInt('--poll-interval', values['poll-interval']);
  const worker = workerOptionsFrom(values);
  const retention = retentionFrom(values);
  const app = appFrom(values);
  const tools = await toolsFrom(values);
  const logger = createLogger();
  const { store, storeUrl, traces } = await openCommandStore(values, logger);
  // The same composition as `serve`, without a wire in front of it.
  const runtime = createRuntime({
    store,
    tools,
    app,
    worker,
    drainMs,
    logger,
    ...retention,
    limits: { ...(pollInterval === undefined ? {} : { pollInterval }), ...journalLimitsFrom(values) },
  });
  await runtime.start();
  const operator = values.metrics === undefined ? null : await serveOperatorEndpoints(runtime, values.metrics, { metricsToken });
  if (operator !== null) io.out(`tasklatch worker metrics on ${operator.url}/metrics`);
  const id = runtime.worker?.id ?? '';
  // Listening before the line that says it runs: a SIGTERM sent on reading it must drain, not kill.
  const stopped = untilStopped();
  logger.info(
    { store: describeStoreUrl(storeUrl), ...(store.driver === undefined ? {} : { driver: store.driver }), app, worker: id },
    'tasklatch worker started',
  );
  io.out(`tasklatch worker ${id} running for app ${app}`);
  const reason = await stopped;
  logger.info({ reason }, 'draining');
  await runtime.close();
  await operator?.close();
  await store.close();
  await traces?.shutdown();
  return 0;
}
