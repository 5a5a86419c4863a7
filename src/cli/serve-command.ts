import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { TasklatchError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../http/connection-bound.js';
import { startHttpServer } from '../http/http-server.js';
import { createOAuthResource, type OAuthResourceOptions } from '../http/oauth/oauth-resource.js';
import { watchTokenFile } from '../http/token-file.js';
import { createTaskServer, type Authenticate } from '../wire-2025/server.js';
import { createLogger, type Logger } from '../runtime/log.js';
import { createRuntime } from '../runtime/task-runtime.js';
import { describeStoreUrl } from '../store/open-store.js';
import type { CliIo } from './io.js';
import { metricsTokenFrom, operatorEndpointsFor, parseHostPort, serveOperatorEndpoints } from './operator-endpoints.js';
import { parsePrincipalArg } from './task-query-args.js';
import { untilStopped } from './until-stopped.js';
import {
  appFrom,
  journalLimitsFrom,
  openCommandStore,
  positiveInt,
  retentionFrom,
  toolsFrom,
  WORKER_ARG_OPTIONS,
  WORKER_USAGE_LINES,
  workerOptionsFrom,
} from './worker-options.js';

export const SERVE_USAGE = `Usage: tasklatch serve [--http [HOST:]PORT | --stdio] [options]

Serves MCP tools with durable tasks, to 2025-11-25 and 2026-07-28 clients on one endpoint.
  --http [HOST:]PORT     Streamable HTTP at /mcp (default 127.0.0.1:3000)
  --stdio                serve one client over stdin/stdout
  --auth-tokens FILE     JSON object: bearer token → { "tenant", "subject" }; other requests get 401
  --issuer URL           OAuth: accept JWT access tokens of this authorization server (keys from its metadata)
  --resource URL         OAuth: this endpoint's public URL, the audience tokens must name (with --issuer)
  --audience URL         OAuth: the audience tokens must name, when not the resource
  --scopes A,B           OAuth: scopes every call needs (else 403 insufficient_scope)
  --tenant-claim NAME    OAuth: the claim naming the caller's tenant (default tenant); the subject is sub
  --introspection-url URL OAuth: RFC 7662 endpoint for opaque tokens; client id and secret from
                         TASKLATCH_INTROSPECTION_CLIENT_ID and TASKLATCH_INTROSPECTION_CLIENT_SECRET
  --principal T/S        the caller of a --stdio session (tenant/subject)
  --no-workers           only admit and answer; 'tasklatch worker' processes run the tasks
${WORKER_USAGE_LINES}
  --default-ttl MS       ttl of a task whose request names none (default 3600000)
  --max-ttl MS           largest ttl granted (default 604800000)
  --max-active N         non-terminal tasks one caller may hold at once (default 100)
  --max-stored N         unexpired tasks one caller may hold, finished ones included (default 1000)
  --store-outage-ms MS   a waiting read (tasks/result, tasks/get, tasks/list, a subscription) rides through
                         a store outage this long before it answers Store unavailable (default 15000; 0: at once)
  --max-body-bytes N     largest HTTP request body (default 4194304)
  --max-sessions N       open 2025-11-25 sessions of all callers (default 1000)
  --session-idle-ms MS   a session idle this long is closed (default 1800000)
  --max-connections N    open HTTP connections; at the bound a new one closes the oldest with no request
                         in flight, or is refused when all have one (default 16384)
  --headers-timeout-ms MS time a request's headers may take to arrive (default 10000)
  --request-timeout-ms MS time a whole request may take to arrive; a response may stream longer (default 30000)
  --keep-alive-ms MS     time a kept-alive connection waits for its next request (default 65000)
  --metrics [HOST:]PORT  serve GET /metrics (Prometheus), /healthz, /readyz and the web console (/console)
                         on a listener of their own; /mcp's listener then serves no /metrics
  --metrics-token-file F /metrics and /console answer only 'Authorization: Bearer <the token in F>' (the
                         console also takes it in a form), else 401 (or set TASKLATCH_METRICS_TOKEN)
  --task-tools           a client without task support calling a 'required' tool gets the task and a text
                         naming it; task_status, task_result and task_cancel are served to follow it
With --issuer, /.well-known/oauth-protected-resource[/PATH] names the authorization server.
Without --auth-tokens, --issuer or --principal every caller shares one anonymous context.
Over HTTP, GET /healthz, /readyz and /metrics (Prometheus) answer beside /mcp without the MCP token;
expose /metrics on a private interface (--metrics), or behind its own token.`;

export async function serveCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: false,
    allowNegative: true,
    options: {
      http: { type: 'string' },
      stdio: { type: 'boolean', default: false },
      ...WORKER_ARG_OPTIONS,
      'auth-tokens': { type: 'string' },
      issuer: { type: 'string' },
      resource: { type: 'string' },
      audience: { type: 'string' },
      scopes: { type: 'string' },
      'tenant-claim': { type: 'string' },
      'introspection-url': { type: 'string' },
      principal: { type: 'string' },
      workers: { type: 'boolean', default: true },
      'default-ttl': { type: 'string' },
      'max-ttl': { type: 'string' },
      'max-active': { type: 'string' },
      'max-stored': { type: 'string' },
      'store-outage-ms': { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'max-sessions': { type: 'string' },
      'session-idle-ms': { type: 'string' },
      'max-connections': { type: 'string' },
      'headers-timeout-ms': { type: 'string' },
      'request-timeout-ms': { type: 'string' },
      'keep-alive-ms': { type: 'string' },
      'task-tools': { type: 'boolean', default: false },
      metrics: { type: 'string' },
      'metrics-token-file': { type: 'string' },
    },
  });
  if (values.help === true) {
    io.out(SERVE_USAGE);
    return 0;
  }
  if (values.stdio && values.http !== undefined) throw new TasklatchError('INVALID_INPUT', '--stdio and --http exclude each other');
  if (values.principal !== undefined && !values.stdio)
    throw new TasklatchError('INVALID_INPUT', '--principal names the caller of a --stdio session; over HTTP use --auth-tokens');
  // Every argument is checked before anything starts: a bad one changes nothing.
  const logger = createLogger();
  const listen = values.stdio ? null : parseListen(values.http ?? '127.0.0.1:3000');
  if (values.metrics !== undefined) parseHostPort('--metrics', values.metrics);
  const metricsToken = await metricsTokenFrom(values['metrics-token-file']);
  const oauth = oauthFrom(values);
  if (oauth !== undefined && values['auth-tokens'] !== undefined) throw new TasklatchError('INVALID_INPUT', '--auth-tokens and --issuer exclude each other');
  if (oauth !== undefined && values.stdio) throw new TasklatchError('INVALID_INPUT', '--issuer serves HTTP; a --stdio caller is named by --principal');
  const tokenFile = values['auth-tokens'];
  const tokens = tokenFile === undefined ? undefined : await watchTokens(tokenFile, logger);
  const sessionPrincipal = values.principal === undefined ? null : parsePrincipalArg('--principal', values.principal);
  const limits = {
    ...(values['default-ttl'] === undefined ? {} : { defaultTtl: positiveInt('--default-ttl', values['default-ttl']) }),
    ...(values['max-ttl'] === undefined ? {} : { maxTtl: positiveInt('--max-ttl', values['max-ttl']) }),
    ...(values['poll-interval'] === undefined ? {} : { pollInterval: positiveInt('--poll-interval', values['poll-interval']) }),
    ...(values['max-active'] === undefined ? {} : { maxActiveTasks: positiveInt('--max-active', values['max-active']) }),
    ...(values['max-stored'] === undefined ? {} : { maxStoredTasks: positiveInt('--max-stored', values['max-stored']) }),
    ...journalLimitsFrom(values),
    ...(values['store-outage-ms'] === undefined ? {} : { storeOutageMs: wholeMs('--store-outage-ms', values['store-outage-ms']) }),
  };
  const httpLimits = {
    ...(values['max-body-bytes'] === undefined ? {} : { maxBodyBytes: positiveInt('--max-body-bytes', values['max-body-bytes']) }),
    sessions: {
      ...(values['max-sessions'] === undefined ? {} : { maxSessions: positiveInt('--max-sessions', values['max-sessions']) }),
      ...(values['session-idle-ms'] === undefined ? {} : { idleMs: positiveInt('--session-idle-ms', values['session-idle-ms']) }),
    },
    connections: connectionsFrom(values),
  };
  const workerSettings = workerOptionsFrom(values);
  const retention = retentionFrom(values);
  const app = appFrom(values);
  const tools = await toolsFrom(values);
  const { store, storeUrl, traces } = await openCommandStore(values, logger);
  const authenticate: Authenticate | undefined =
    tokens !== undefined || oauth !== undefined
      ? ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null
      : sessionPrincipal !== null
        ? () => sessionPrincipal
        : undefined;
  const runtime = createRuntime({
    store,
    tools,
    app,
    callersIdentified: authenticate !== undefined,
    execute: values.workers,
    taskTools: values['task-tools'],
    worker: workerSettings,
    limits,
    logger,
    ...retention,
  });
  const server = createTaskServer({ runtime, ...(authenticate === undefined ? {} : { authenticate }) });
  await runtime.start();
  await server.start();
  logger.info(
    {
      store: describeStoreUrl(storeUrl),
      ...(store.driver === undefined ? {} : { driver: store.driver }),
      app,
      tools: server.tools.list().map((t) => t.name),
    },
    'tasklatch serving',
  );

  const metricsServer = values.metrics === undefined ? null : await serveOperatorEndpoints(runtime, values.metrics, { metricsToken });
  if (metricsServer !== null) io.out(`tasklatch metrics on ${metricsServer.url}/metrics`);
  const stopped = untilStopped().then((reason) => logger.info({ reason }, 'stopping'));
  let closeTransport: () => Promise<void>;
  if (values.stdio) {
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((done) => (transport.onclose = done));
    await server.createSession(sessionPrincipal).connect(transport);
    closeTransport = () => transport.close();
    await Promise.race([stopped, closed]);
  } else {
    const { host, port } = listen ?? parseListen('127.0.0.1:3000');
    const operator = operatorEndpointsFor(runtime, { metrics: metricsServer === null, metricsToken });
    // The session wire built above: --principal names its callers when no token does.
    const http = await startHttpServer({
      runtime,
      taskServer: server,
      host,
      port,
      ...httpLimits,
      ...(tokens === undefined ? {} : { authenticate: tokens.authenticate }),
      ...(oauth === undefined ? {} : { oauth: { ...oauth, onRefusal: (reason, description) => logger.info({ reason, description }, 'access token refused') } }),
      extraRoutes: operator.route,
    });
    io.out(`tasklatch listening on ${http.url}`);
    closeTransport = async () => {
      await http.close();
      operator.close();
      tokens?.close();
    };
    await stopped;
  }
  await closeTransport();
  await metricsServer?.close();
  await server.close();
  await runtime.close();
  await store.close();
  await traces?.shutdown();
  return 0;
}

/** The OAuth resource server's settings, checked now (no network): a bad URL or scope stops the start. */
function oauthFrom(values: Record<string, string | boolean | undefined>): OAuthResourceOptions | undefined {
  const text = (name: string) => (typeof values[name] === 'string' ? values[name] : undefined);
  const issuer = text('issuer');
  const resource = text('resource');
  const dependent = ['audience', 'scopes', 'tenant-claim', 'introspection-url'].filter((name) => text(name) !== undefined);
  if (issuer === undefined && resource === undefined) {
    if (dependent.length > 0) throw new TasklatchError('INVALID_INPUT', `--${dependent[0]!} needs --issuer and --resource`);
    return undefined;
  }
  if (issuer === undefined || resource === undefined) throw new TasklatchError('INVALID_INPUT', '--issuer and --resource go together');
  const scopes = text('scopes');
  const audience = text('audience');
  const tenantClaim = text('tenant-claim');
  const introspection = introspectionFrom(text('introspection-url'));
  const options: OAuthResourceOptions = {
    issuer,
    resource,
    ...(audience === undefined ? {} : { audience }),
    ...(scopes === undefined ? {} : { scopes: scopes.split(',').map((s) => s.trim()) }),
    ...(tenantClaim === undefined ? {} : { tenantClaim }),
    ...(introspection === undefined ? {} : { introspection }),
  };
  createOAuthResource(options);
  return options;
}

/** The introspection endpoint and, from the environment (never a flag: argv is visible to every local user), its client. */
function introspectionFrom(url: string | undefined) {
  if (url === undefined) return undefined;
  const clientId = process.env.TASKLATCH_INTROSPECTION_CLIENT_ID;
  const clientSecret = process.env.TASKLATCH_INTROSPECTION_CLIENT_SECRET;
  if (clientId === undefined || clientId === '' || clientSecret === undefined || clientSecret === '')
    throw new TasklatchError('INVALID_INPUT', '--introspection-url needs TASKLATCH_INTROSPECTION_CLIENT_ID and TASKLATCH_INTROSPECTION_CLIENT_SECRET');
  return { url, clientId, clientSecret };
}

/** The tokens file, reloaded when it changes; a bad edit keeps the last good tokens and logs why. */
async function watchTokens(file: string, logger: Logger) {
  try {
    return await watchTokenFile(file, {
      onReload: (count) => logger.info({ file, tokens: count }, 'tokens file reloaded'),
      onError: (error) => logger.warn({ file, err: error.message }, 'tokens file unreadable; keeping the previous tokens'),
    });
  } catch (error) {
    throw new TasklatchError('INVALID_INPUT', `--auth-tokens ${(error as Error).message}`);
  }
}

/** A whole number of milliseconds, 0 or more. */
function wholeMs(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n))
    throw new TasklatchError('INVALID_INPUT', `${flag} takes a whole number of milliseconds, got ${JSON.stringify(text)}`);
  return n;
}

function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:(.+):)?(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port > 65535) throw new TasklatchError('INVALID_INPUT', `--http takes [HOST:]PORT, got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1'), port };
}

/** The connection limits the flags name (the rest keep `DEFAULT_CONNECTION_LIMITS`), checked before anything starts. */
function connectionsFrom(values: Record<string, string | boolean | undefined>): Partial<ConnectionLimits> {
  const flags = [
    ['max-connections', 'maxConnections'],
    ['headers-timeout-ms', 'headersTimeoutMs'],
    ['request-timeout-ms', 'requestTimeoutMs'],
    ['keep-alive-ms', 'keepAliveTimeoutMs'],
  ] as const;
  const given: Partial<ConnectionLimits> = {};
  for (const [flag, key] of flags) {
    const value = values[flag];
    if (typeof value === 'string') given[key] = positiveInt(`--${flag}`, value);
  }
  const { headersTimeoutMs, requestTimeoutMs } = Object.assign({}, DEFAULT_CONNECTION_LIMITS, given);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new TasklatchError('INVALID_INPUT', `--headers-timeout-ms (${headersTimeoutMs}) must not be longer than --request-timeout-ms (${requestTimeoutMs})`);
  }
  return given;
}
