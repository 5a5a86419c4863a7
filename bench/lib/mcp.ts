import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { WireRequest } from '../../src/core/types.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createLogger } from '../../src/runtime/log.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { authKeyOf, type Principal } from '../../src/tools/principal.js';
import { defineTool } from '../../src/tools/tool.js';
import type { TaskLimits } from '../../src/service/limits.js';
import type { TaskStore } from '../../src/store/types.js';

/** The bench tool's name and arguments; its handler answers at once. */
export const TOOL = 'bench_noop';
export const TTL_MS = 3_600_000;

export function toolArgs(n: number): { month: string; rows: number } {
  return { month: '2026-06', rows: n };
}

/** The `tools/call` of the bench tool as a task, for the service's `create` (no wire). */
export function taskCall(n: number): WireRequest {
  return { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(n), task: { ttl: TTL_MS } } };
}

/** A task tool that does nothing: execution never dominates what is measured. */
export const noopTool = defineTool({
  name: TOOL,
  description: 'Returns at once. Benchmark tool.',
  inputSchema: z.object({ month: z.string(), rows: z.number().int() }),
  execution: { taskSupport: 'required' },
  handler: async (args) => ({ content: [{ type: 'text', text: `ok ${args.rows}` }], structuredContent: { rows: args.rows } }),
});

/**
 * Admissions per auth key before a requestor moves on to a fresh one. The default active-task
 * limit (maxActiveTasks 100) stays on, and with execute: false no task ever finishes, so a
 * requestor that kept one auth key would be refused after 100 admissions.
 */
export const ADMISSIONS_PER_AUTH_KEY = 50;

const rotations = new Map<string, number>();

/** The principal a request of `base` runs as: `base` with a subject that changes every 50 calls. */
export function rotate(base: Principal | undefined): Principal | null {
  if (base === undefined) return null;
  const key = authKeyOf(base);
  const n = rotations.get(key) ?? 0;
  rotations.set(key, n + 1);
  return { tenant: base.tenant, subject: `${base.subject}.${Math.floor(n / ADMISSIONS_PER_AUTH_KEY)}` };
}

/** The auth key a service-level requestor uses for its next admission (same rotation). */
export function rotatingAuthKey(i: number): string {
  return authKeyOf(rotate(principalOf(i)) as Principal);
}

/** Requestor `i`'s principal; requestors spread over 8 tenants. */
export function principalOf(i: number): Principal {
  return { tenant: `bench-${i % 8}`, subject: `req-${i}` };
}

export interface TasklatchServer {
  server: TaskServer;
  close(): Promise<void>;
}

/** A tasklatch TaskServer over `store` with the bench tool and per-request principals. */
export async function tasklatchServer(
  store: TaskStore,
  options: { execute: boolean; listen?: boolean; limits?: Partial<TaskLimits>; rotateAuthKeys?: boolean },
): Promise<TaskServer> {
  const server = createTaskServer({
    store,
    tools: [noopTool],
    authenticate: ({ authInfo }) => {
      const principal = authInfo?.extra?.principal as Principal | undefined;
      return options.rotateAuthKeys === true ? rotate(principal) : (principal ?? null);
    },
    logger: createLogger('silent'),
    execute: options.execute,
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  // start() LISTENs on PostgreSQL, as `tasklatch serve` does.
  if (options.listen ?? true) await server.start();
  return server;
}

/** A client of the SDK, connected in memory to a new session of `server` as `principal`. */
export async function memoryClient(server: TaskServer, principal: Principal): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  // The requestor's identity travels with each message, as a bearer token's does over HTTP.
  const send = clientSide.send.bind(clientSide);
  const authInfo = { token: 'in-memory', clientId: authKeyOf(principal), scopes: [], extra: { principal } };
  clientSide.send = (message, options) => send(message, { ...options, authInfo });
  await server.createSession(principal).connect(serverSide);
  const client = new Client({ name: 'tasklatch-bench', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}

/** Serves `server` over Streamable HTTP on 127.0.0.1 with one bearer token per requestor. */
export async function httpFront(server: TaskServer, requestors: number): Promise<{ http: RunningHttp; tokens: string[] }> {
  const tokens = Array.from({ length: requestors }, (_, i) => `bench-token-${i}`);
  const http = await startHttpServer({
    runtime: server.runtime,
    taskServer: server,
    host: '127.0.0.1',
    port: 0,
    tokens: new Map(tokens.map((t, i) => [t, principalOf(i)])),
  });
  return { http, tokens };
}

/**
 * Serves `server`'s runtime over HTTP for the 2026-07-28 wire alone, one bearer token per
 * requestor, each request's caller rotated like the TaskServer's (`rotate`): that wire takes its
 * caller from the HTTP front, not from a TaskServer's `authenticate`.
 */
export async function wireFront(server: TaskServer, requestors: number): Promise<{ http: RunningHttp; tokens: string[] }> {
  const tokens = Array.from({ length: requestors }, (_, i) => `bench-wire-token-${i}`);
  const principals = new Map(tokens.map((t, i) => [`Bearer ${t}`, principalOf(i)]));
  const http = await startHttpServer({
    runtime: server.runtime,
    generations: ['2026-07-28'],
    host: '127.0.0.1',
    port: 0,
    authenticate: async ({ headers }) => rotate(principals.get(headers.authorization ?? '')),
  });
  return { http, tokens };
}

/** A client of the SDK over Streamable HTTP with a bearer token. */
export async function httpClient(url: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'tasklatch-bench', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** A task-augmented tools/call of the bench tool; resolves with the CreateTaskResult. */
export async function callAsTask(client: Client, n: number, tool = TOOL, args: Record<string, unknown> = toolArgs(n)) {
  return client.request({ method: 'tools/call', params: { name: tool, arguments: args, task: { ttl: TTL_MS } } }, CreateTaskResultSchema);
}

/** tasks/result: blocks until the task is terminal. */
export async function taskResult(client: Client, taskId: string) {
  return client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, { timeout: 120_000 });
}

/**
 * The alternative: the SDK 1.x experimental tasks stack. One McpServer per session (an
 * McpServer serves one transport) sharing one InMemoryTaskStore; the same tool, which creates
 * its task and returns (nothing is executed, like tasklatch with execute: false).
 */
export function sdkTaskStack(): { connect(): Promise<Client>; close(): Promise<void> } {
  const taskStore = new InMemoryTaskStore();
  const servers: McpServer[] = [];
  return {
    connect: async () => {
      const server = new McpServer({ name: 'sdk-tasks', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore });
      server.experimental.tasks.registerToolTask(
        TOOL,
        { description: 'Returns at once. Benchmark tool.', inputSchema: { month: z.string(), rows: z.number().int() }, execution: { taskSupport: 'required' } },
        {
          createTask: async (_args, extra) => ({ task: await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? TTL_MS }) }),
          getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
          getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
        },
      );
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      servers.push(server);
      const client = new Client({ name: 'tasklatch-bench', version: '1.0.0' });
      await client.connect(clientSide);
      return client;
    },
    close: async () => {
      await Promise.allSettled(servers.map((s) => s.close()));
      taskStore.cleanup();
    },
  };
}
