import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { TasklatchError } from '../core/errors.js';
import { demoTools } from '../demo/demo-tools.js';
import { startHttpServer } from '../mcp/http-server.js';
import { createLogger } from '../mcp/log.js';
import { createTaskServer, type Authenticate } from '../mcp/task-server.js';
import type { Principal } from '../mcp/tool.js';
import { DEFAULT_STORE_URL, describeStoreUrl, openStore } from '../store/open-store.js';
import type { CliIo } from './io.js';

export const SERVE_USAGE = `Usage: tasklatch serve [--http [HOST:]PORT | --stdio] [options]

Serves MCP tools with durable tasks (spec 2025-11-25).
  --http [HOST:]PORT     Streamable HTTP at /mcp (default 127.0.0.1:3000)
  --stdio                serve one client over stdin/stdout
  --store URL            sqlite:PATH (default ${DEFAULT_STORE_URL}), postgres://…, memory
  --auth-tokens FILE     JSON object: bearer token → { "tenant", "subject" }; other requests get 401
  --principal T/S        the caller of a --stdio session (tenant/subject)
  --exports DIR          where export_ledger writes (default ./.tasklatch/exports)
  --no-demo              serve no demo tools
  --default-ttl MS       ttl of a task whose request names none (default 3600000)
  --max-ttl MS           largest ttl granted (default 604800000)
  --poll-interval MS     pollInterval suggested to clients (default 1000)
  --max-active N         non-terminal tasks one caller may hold at once (default 100)
Without --auth-tokens or --principal every caller shares one anonymous context.`;

const tokenFile = z.record(z.string().min(1), z.object({ tenant: z.string().min(1).regex(/^[^/]+$/, 'a tenant has no "/"'), subject: z.string().min(1) }));

export async function serveCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: false,
    allowNegative: true,
    options: {
      http: { type: 'string' },
      stdio: { type: 'boolean', default: false },
      store: { type: 'string', default: DEFAULT_STORE_URL },
      'auth-tokens': { type: 'string' },
      principal: { type: 'string' },
      exports: { type: 'string', default: './.tasklatch/exports' },
      demo: { type: 'boolean', default: true },
      'default-ttl': { type: 'string' },
      'max-ttl': { type: 'string' },
      'poll-interval': { type: 'string' },
      'max-active': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help === true) {
    io.out(SERVE_USAGE);
    return 0;
  }
  if (values.stdio && values.http !== undefined) throw new TasklatchError('INVALID_INPUT', '--stdio and --http exclude each other');
  if (values.principal !== undefined && !values.stdio) throw new TasklatchError('INVALID_INPUT', '--principal names the caller of a --stdio session; over HTTP use --auth-tokens');
  const tokens = values['auth-tokens'] === undefined ? undefined : await loadTokens(values['auth-tokens']);
  const sessionPrincipal = values.principal === undefined ? null : parsePrincipal(values.principal);
  const limits = {
    ...(values['default-ttl'] === undefined ? {} : { defaultTtl: positiveInt('--default-ttl', values['default-ttl']) }),
    ...(values['max-ttl'] === undefined ? {} : { maxTtl: positiveInt('--max-ttl', values['max-ttl']) }),
    ...(values['poll-interval'] === undefined ? {} : { pollInterval: positiveInt('--poll-interval', values['poll-interval']) }),
    ...(values['max-active'] === undefined ? {} : { maxActiveTasks: positiveInt('--max-active', values['max-active']) }),
  };
  const logger = createLogger();
  const store = await openStore(values.store);
  const authenticate: Authenticate | undefined =
    tokens !== undefined
      ? ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null
      : sessionPrincipal !== null
        ? () => sessionPrincipal
        : undefined;
  const server = createTaskServer({
    store,
    tools: values.demo ? demoTools({ exportsDir: resolve(values.exports) }) : [],
    ...(authenticate === undefined ? {} : { authenticate }),
    limits,
    logger,
  });
  await server.start();
  logger.info({ store: describeStoreUrl(values.store), tools: server.tools.list().map((t) => t.name) }, 'tasklatch serving');

  const stopped = new Promise<void>((done) => {
    const stop = () => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  let closeTransport: () => Promise<void>;
  if (values.stdio) {
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((done) => (transport.onclose = done));
    await server.createSession(sessionPrincipal).connect(transport);
    closeTransport = () => transport.close();
    await Promise.race([stopped, closed]);
  } else {
    const { host, port } = parseListen(values.http ?? '127.0.0.1:3000');
    const http = await startHttpServer(server, { host, port, ...(tokens === undefined ? {} : { tokens }) });
    io.out(`tasklatch listening on ${http.url}`);
    closeTransport = () => http.close();
    await stopped;
  }
  await closeTransport();
  await server.close();
  await store.close();
  return 0;
}

async function loadTokens(file: string): Promise<Map<string, Principal>> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new TasklatchError('INVALID_INPUT', `--auth-tokens ${file}: ${(error as Error).message}`);
  }
  const parsed = tokenFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TasklatchError('INVALID_INPUT', `--auth-tokens ${file}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return new Map(Object.entries(parsed.data));
}

function parsePrincipal(text: string): Principal {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) throw new TasklatchError('INVALID_INPUT', `--principal must be TENANT/SUBJECT, got ${JSON.stringify(text)}`);
  return { tenant: text.slice(0, slash), subject: text.slice(slash + 1) };
}

function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:(.+):)?(\d{1,5})$/.exec(text);
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port > 65535) throw new TasklatchError('INVALID_INPUT', `--http takes [HOST:]PORT, got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1'), port };
}

function positiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new TasklatchError('INVALID_INPUT', `${flag} takes a positive whole number, got ${JSON.stringify(text)}`);
  return n;
}
