import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type JsonRpcResponse, type RawClientDispatch, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';

export const MODERN = '2026-07-28';
export const CLIENT_INFO = { name: 'tasklatch-requester-test', version: '1.0.0' };

type JsonRpcReply = { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
let nextId = 1;

/** The `_meta` framing a 2026-07-28 request carries (what ext-tasks adds to the requests it hands to rawDispatch). */
export function framed(method: string, params: Record<string, unknown>): { method: string; params: Record<string, unknown> } {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  };
  return { method, params: { ...params, _meta: meta } };
}

/** One 2026-07-28 POST with the routing headers (`Mcp-Name` from `headers`, else the tool or task named in params); JSON or SSE reply. */
export async function post(
  url: string,
  token: string,
  request: { method: string; params?: Record<string, unknown> },
  options: { headers?: Readonly<Record<string, string>>; signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<{ status: number; reply: JsonRpcReply }> {
  const body = { jsonrpc: '2.0', id: nextId++, ...request };
  // Context headers arrive in any case; fetch would join two spellings of one name into "a, b".
  const extra = Object.fromEntries(Object.entries(options.headers ?? {}).map(([key, value]) => [key.toLowerCase(), value]));
  const named = request.method === 'tools/call' ? request.params?.name : request.params?.taskId;
  const name = extra['mcp-name'] ?? (typeof named === 'string' ? named : undefined);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      ...extra,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': request.method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
    },
    body: JSON.stringify(body),
    signal: options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]),
  });
  const text = await res.text();
  const sse = (res.headers.get('content-type') ?? '').includes('text/event-stream');
  return { status: res.status, reply: sse ? lastSseReply(text) : (JSON.parse(text) as JsonRpcReply) };
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
  if (reply === undefined) throw new Error(`no JSON-RPC reply in the event stream: ${text}`);
  return reply;
}

/** The host-owned POST ext-tasks needs for 2026-07-28 tools/call and tasks/*. */
export function httpDispatch(url: string, token: string): RawClientDispatch {
  return async (request, options = {}): Promise<JsonRpcResponse> => {
    const { reply } = await post(url, token, request as { method: string; params?: Record<string, unknown> }, {
      ...(options.context?.headers === undefined ? {} : { headers: options.context.headers }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.context?.requestTimeoutMs === undefined ? {} : { timeoutMs: options.context.requestTimeoutMs }),
    });
    if (reply.error !== undefined) return { kind: 'error', error: reply.error as Extract<JsonRpcResponse, { kind: 'error' }>['error'] };
    return { kind: 'result', result: reply.result as Extract<JsonRpcResponse, { kind: 'result' }>['result'] };
  };
}

function transport(url: string, token: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
}

export interface Requester {
  client: Client;
  session: TaskEnabledSession;
  close(): Promise<void>;
}

/** The official 2.x client pinned to 2026-07-28 and an ext-tasks session over {@link httpDispatch}. */
export async function modernRequester(url: string, token: string): Promise<Requester> {
  const client = new Client(CLIENT_INFO, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport(url, token));
  const session = createTaskSessionFromClient(client, {
    endpointId: `modern ${url} ${token}`,
    rawDispatch: httpDispatch(url, token),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: CLIENT_INFO, clientCapabilities: {} },
  });
  return { client, session, close: async () => (await session.close(), await client.close()) };
}

/** The official 2.x client in legacy mode (a 2025-11-25 initialize handshake) and an ext-tasks session over it. */
export async function legacyRequester(url: string, token: string): Promise<Requester> {
  const client = new Client(CLIENT_INFO, { capabilities: {}, versionNegotiation: { mode: 'legacy' } });
  await client.connect(transport(url, token));
  const session = createTaskSessionFromClient(client, { endpointId: `legacy ${url} ${token}` });
  return { client, session, close: async () => (await session.close(), await client.close()) };
}
