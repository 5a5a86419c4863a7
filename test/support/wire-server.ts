import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { z } from 'zod';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type HttpOptions, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import type { TaskLimits } from '../../src/service/limits.js';
import type { TaskStore } from '../../src/store/types.js';
import type { Principal } from '../../src/tools/principal.js';
import { defineTool } from '../../src/tools/tool.js';

/** The callers of a wire test: token → principal. */
export const CALLERS = {
  'token-alice': { tenant: 'acme', subject: 'alice' },
  'token-bob': { tenant: 'globex', subject: 'bob' },
  'token-carol': { tenant: 'initech', subject: 'carol' },
} as const satisfies Record<string, Principal>;

export const authKeys = Object.values(CALLERS).map((p) => `${p.tenant}/${p.subject}`);

/** A tool whose task runs until it is cancelled (or a minute passes): a task that stays working. */
export const holdTool = defineTool({
  name: 'hold',
  description: 'Runs until cancelled',
  inputSchema: z.object({ note: z.string().optional() }),
  execution: { taskSupport: 'optional' },
  async handler(_args, ctx) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 60_000);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    return { content: [{ type: 'text', text: 'held' }] };
  },
});

/** A tool whose result is `size` characters of text: for the result bound. */
export const bulkyTool = defineTool({
  name: 'bulky',
  description: 'Returns a large text',
  inputSchema: z.object({ size: z.number().int().min(0).max(10_000_000) }),
  execution: { taskSupport: 'optional' },
  async handler(args) {
    return { content: [{ type: 'text', text: 'x'.repeat(args.size) }] };
  },
});

/** Calls per store method, counted by a proxy around a store. */
export type Calls = Record<string, number>;

/** The store, with every method call counted (reads, audit lines) in `calls`. */
export function countingStore(store: TaskStore): { store: TaskStore; calls: Calls } {
  const calls: Calls = {};
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        calls[prop] = (calls[prop] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

export interface WireServer {
  server: TaskServer;
  http: RunningHttp;
  calls: Calls;
  store: TaskStore;
  /** Structured log lines written so far. */
  logs: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** tasklatch over HTTP on a loopback port, with the three callers' tokens, the demo tools and `hold`. */
export async function startWireServer(
  store: TaskStore,
  options: { limits?: Partial<TaskLimits>; http?: Partial<HttpOptions>; execute?: boolean } = {},
): Promise<WireServer> {
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const counted = countingStore(store);
  const server = createTaskServer({
    store: counted.store,
    tools: [...demoTools({ exportsDir: await mkdtemp(join(tmpdir(), 'tasklatch-wire-')) }), holdTool, bulkyTool],
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: pino({ level: 'info' }, sink),
    execute: options.execute ?? true,
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  await server.start();
  const tokens = new Map<string, Principal>(Object.entries(CALLERS));
  const http = await startHttpServer({ runtime: server.runtime, taskServer: server, host: '127.0.0.1', port: 0, tokens, ...options.http });
  return {
    server,
    http,
    calls: counted.calls,
    store: counted.store,
    logs,
    close: async () => {
      await http.close();
      await server.close();
      await store.close();
    },
  };
}

/** Every stored task of the test's callers, as `taskId@version`, and the open outbox entries: what a rejected call must not change. */
export async function storedState(store: TaskStore): Promise<string[]> {
  const now = Date.now();
  const rows: string[] = [];
  for (const authKey of authKeys) {
    const page = await store.list({ authKey, now, after: null, limit: 100_000 });
    rows.push(...page.records.map((r) => `${authKey} ${r.taskId}@${r.version} ${r.status}`));
  }
  rows.push(`outbox ${await store.pendingDispatch()}`);
  return rows.sort();
}

/** POSTs one raw body to the endpoint. */
export async function postRaw(url: string, body: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    ...(signal === undefined ? {} : { signal }),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
}

/** Opens a 2025-11-25 session for a token over plain HTTP; returns its id and the headers for its requests. */
export async function openSession(url: string, token: string): Promise<{ sessionId: string; headers: Record<string, string> }> {
  const res = await postRaw(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'wire-test', version: '1.0.0' } },
    }),
    { authorization: `Bearer ${token}` },
  );
  const sessionId = res.headers.get('mcp-session-id');
  await res.text();
  if (res.status !== 200 || sessionId === null) throw new Error(`initialize answered ${res.status}`);
  const headers = { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  await postRaw(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers).then((r) => r.text());
  return { sessionId, headers };
}

/** The one JSON-RPC message of an answer, JSON or a single SSE event. */
export async function messageOf(res: Response): Promise<{ id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } } | null> {
  const text = await res.text();
  if (text.trim() === '') return null;
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const data = text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6);
    const last = data.at(-1);
    return last === undefined ? null : (JSON.parse(last.slice(6)) as never);
  }
  return JSON.parse(text) as never;
}
