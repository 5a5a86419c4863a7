/**
 * `tasklatch/client`: a requester for MCP 2026-07-28 with the tasks extension, on the official
 * 2.x client (`@modelcontextprotocol/client`) and `@modelcontextprotocol/ext-tasks`. The
 * extension's client needs a host-owned `rawDispatch` for the stateless `tools/call` and
 * `tasks/*` requests; {@link httpDispatch} is one, with the routing headers every 2026-07-28
 * server checks. It talks to any 2026-07-28 server, tasklatch's or another. A subpath of its
 * own: it loads the MCP client packages (optional peer dependencies).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type JsonRpcResponse, type RawClientDispatch, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { META_KEYS, TASKS_EXTENSION } from './core/meta-keys.js';

/** The protocol revision this requester speaks in modern mode. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

const DEFAULT_CLIENT_INFO = { name: 'tasklatch-client', version: '1.0.0' };
const DEFAULT_TIMEOUT_MS = 60_000;

/** How to reach a server. */
export interface RequesterOptions {
  /** A bearer token, sent as `Authorization: Bearer …` on every request. */
  token?: string;
  /** The client's name and version, as the server sees them in `_meta` and at `initialize`. */
  clientInfo?: { name: string; version: string };
  /** How long one request may take unless ext-tasks sets its own timeout (ms, default 60000). */
  timeoutMs?: number;
}

/** One JSON-RPC reply, as a server sent it. */
export interface JsonRpcReply {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

let nextId = 1;

/**
 * A request with the `_meta` a 2026-07-28 request carries (protocol version, client info, and
 * client capabilities declaring the tasks extension): what ext-tasks hands to `rawDispatch`.
 */
export function framed(
  method: string,
  params: Record<string, unknown>,
  clientInfo: { name: string; version: string } = DEFAULT_CLIENT_INFO,
): { method: string; params: Record<string, unknown> } {
  const meta = {
    [META_KEYS.protocolVersion]: MODERN_PROTOCOL_VERSION,
    [META_KEYS.clientInfo]: clientInfo,
    [META_KEYS.clientCapabilities]: { extensions: { [TASKS_EXTENSION]: {} } },
  };
  return { method, params: { ...params, _meta: meta } };
}

/**
 * POSTs one 2026-07-28 request with the routing headers: `MCP-Protocol-Version`, `Mcp-Method`,
 * and `Mcp-Name` (from `options.headers`, else `params.name` of `tools/call` or `params.taskId`
 * of `tasks/*`). Answers the HTTP status and the JSON-RPC reply, read from JSON or from the SSE
 * stream (the last reply in it). Headers are sent in lower case whatever case they are given in:
 * `fetch` would join two spellings of one name into "a, b", which a server refuses.
 */
export async function post(
  url: string,
  request: { method: string; params?: Record<string, unknown> },
  options: RequesterOptions & { headers?: Readonly<Record<string, string>>; signal?: AbortSignal } = {},
): Promise<{ status: number; reply: JsonRpcReply }> {
  const body = { jsonrpc: '2.0', id: nextId++, ...request };
  const extra = Object.fromEntries(Object.entries(options.headers ?? {}).map(([key, value]) => [key.toLowerCase(), value]));
  const named = request.method === 'tools/call' ? request.params?.name : request.params?.taskId;
  const name = extra['mcp-name'] ?? (typeof named === 'string' ? named : undefined);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      ...extra,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
      'mcp-method': request.method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
    },
    body: JSON.stringify(body),
    signal: options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]),
  });
  const text = await res.text();
  const sse = (res.headers.get('content-type') ?? '').includes('text/event-stream');
  try {
    return { status: res.status, reply: sse ? lastSseReply(text) : (JSON.parse(text) as JsonRpcReply) };
  } catch (error) {
    throw new Error(`${request.method} to ${url}: HTTP ${res.status} without a JSON-RPC reply: ${text.slice(0, 200)}`, { cause: error });
  }
}

function lastSseReply(text: string): JsonRpcReply {
  const messages = text
    .split(/\r?\n\r?\n/)
    .map((event) =>
      event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data.length > 0)
    .map((data) => JSON.parse(data) as JsonRpcReply);
  const reply = messages.findLast((m) => m.id !== undefined && (m.result !== undefined || m.error !== undefined));
  if (reply === undefined) throw new Error(`no JSON-RPC reply in the event stream: ${text.slice(0, 200)}`);
  return reply;
}

/**
 * The `rawDispatch` that `createTaskSessionFromClient` needs for 2026-07-28: each request POSTed
 * by {@link post}, with the context headers ext-tasks adds, its signal and its timeout.
 */
export function httpDispatch(url: string, options: RequesterOptions = {}): RawClientDispatch {
  return async (request, dispatchOptions = {}): Promise<JsonRpcResponse> => {
    const { context, signal } = dispatchOptions;
    const { reply } = await post(url, request as { method: string; params?: Record<string, unknown> }, {
      ...options,
      ...(context?.headers === undefined ? {} : { headers: context.headers }),
      ...(signal === undefined ? {} : { signal }),
      ...(context?.requestTimeoutMs === undefined ? {} : { timeoutMs: context.requestTimeoutMs }),
    });
    if (reply.error !== undefined) return { kind: 'error', error: reply.error as Extract<JsonRpcResponse, { kind: 'error' }>['error'] };
    return { kind: 'result', result: reply.result as Extract<JsonRpcResponse, { kind: 'result' }>['result'] };
  };
}

/** A connected client and its ext-tasks session; `close()` ends both. */
export interface Requester {
  client: Client;
  session: TaskEnabledSession;
  close(): Promise<void>;
}

function transport(url: string, token: string | undefined): StreamableHTTPClientTransport {
  const headers = token === undefined ? undefined : { Authorization: `Bearer ${token}` };
  return new StreamableHTTPClientTransport(new URL(url), headers === undefined ? {} : { requestInit: { headers } });
}

/**
 * Connects the official 2.x client pinned to 2026-07-28 and opens an ext-tasks session over
 * {@link httpDispatch}: `session.callTool(name, args, { task: { preference: 'require' } })`
 * creates a task, `settle()` polls it to its end, `session.task(id)` reads one later.
 */
export async function modernRequester(url: string, options: RequesterOptions = {}): Promise<Requester> {
  const clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO;
  const client = new Client(clientInfo, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } } });
  await client.connect(transport(url, options.token));
  const session = createTaskSessionFromClient(client, {
    endpointId: `modern ${url} ${options.token ?? ''}`,
    rawDispatch: httpDispatch(url, options),
    v2RequestFraming: { protocolVersion: MODERN_PROTOCOL_VERSION, clientInfo, clientCapabilities: {} },
  });
  return { client, session, close: async () => (await session.close(), await client.close()) };
}

/** The official 2.x client in legacy mode (a 2025-11-25 `initialize` handshake) and an ext-tasks session over it. */
export async function legacyRequester(url: string, options: RequesterOptions = {}): Promise<Requester> {
  const client = new Client(options.clientInfo ?? DEFAULT_CLIENT_INFO, { capabilities: {}, versionNegotiation: { mode: 'legacy' } });
  await client.connect(transport(url, options.token));
  const session = createTaskSessionFromClient(client, { endpointId: `legacy ${url} ${options.token ?? ''}` });
  return { client, session, close: async () => (await session.close(), await client.close()) };
}
