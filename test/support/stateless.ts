import { TASKS_EXTENSION } from '../../src/core/meta-keys.js';

/** The `_meta` capabilities of a 2026-07-28 request that can take tasks. */
export const WITH_TASKS = { extensions: { [TASKS_EXTENSION]: {} } };

const NAMED_BY: Record<string, string> = { 'tools/call': 'name', 'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId' };

let nextId = 1;

export interface RpcOptions {
  capabilities?: Record<string, unknown>;
  token?: string;
  /** Extra or replaced headers; a header set to null is left out. */
  headers?: Record<string, string | null>;
  meta?: Record<string, unknown>;
}

/** One 2026-07-28 request as a conforming client sends it: `_meta`, routing headers, a fresh id. */
export async function rpc(url: string, method: string, params: Record<string, unknown> = {}, options: RpcOptions = {}) {
  const id = nextId++;
  const member = NAMED_BY[method];
  const headers: Record<string, string | null> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(member !== undefined && typeof params[member] === 'string' ? { 'mcp-name': params[member] } : {}),
    ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
    ...options.headers,
  };
  const body = {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? WITH_TASKS,
        'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
        ...options.meta,
      },
    },
  };
  const res = await fetch(url, {
    method: 'POST',
    headers: Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== null)),
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
  return { status: res.status, id, ...json };
}

/** Polls `tasks/get` until the task is terminal (or `ms` pass). */
export async function settle(url: string, taskId: string, options: RpcOptions = {}, ms = 30_000): Promise<Record<string, unknown>> {
  const end = Date.now() + ms;
  for (;;) {
    const got = await rpc(url, 'tasks/get', { taskId }, options);
    const status = got.result?.status;
    if (status === 'completed' || status === 'failed' || status === 'cancelled') return got.result!;
    if (Date.now() > end) throw new Error(`task ${taskId} still ${String(status)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The JSON-RPC messages of an SSE response, as they arrive, until `enough` says stop (then the stream is dropped). */
export async function readEvents(
  res: Response,
  abort: AbortController,
  enough: (messages: Array<{ method: string; params: Record<string, unknown> }>) => boolean,
) {
  const messages: Array<{ method: string; params: Record<string, unknown> }> = [];
  const reader = res.body!.getReader();
  let buffer = '';
  while (!enough(messages)) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += new TextDecoder().decode(value as Uint8Array);
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const data = buffer
        .slice(0, cut)
        .split('\n')
        .find((line) => line.startsWith('data: '));
      buffer = buffer.slice(cut + 2);
      if (data !== undefined) messages.push(JSON.parse(data.slice(6)) as (typeof messages)[number]);
    }
  }
  abort.abort();
  return messages;
}

/** Opens a 2026-07-28 `subscriptions/listen` for `taskIds`; abort the controller to close the stream. */
export async function listen(url: string, token: string, taskIds: string[], id: string | number) {
  const { response, abort } = startListen(url, token, taskIds, id);
  return { res: await response, abort };
}

/** Sends a `subscriptions/listen` without waiting for its answer: aborting the controller goes away before, or after, it comes. */
export function startListen(url: string, token: string, taskIds: string[], id: string | number) {
  const abort = new AbortController();
  const response = fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: {
        notifications: { taskIds },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': WITH_TASKS },
      },
    }),
  });
  return { response, abort };
}

/** The JSON-RPC messages of a subscription's stream as they come (`messages` grows); `ended` resolves when the stream ends. */
export function collectEvents(response: Promise<Response>): { messages: Array<Record<string, unknown>>; ended: Promise<void> } {
  const messages: Array<Record<string, unknown>> = [];
  const ended = (async () => {
    const res = await response;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
        const data = buffer
          .slice(0, cut)
          .split('\n')
          .find((line) => line.startsWith('data: '));
        buffer = buffer.slice(cut + 2);
        if (data !== undefined) messages.push(JSON.parse(data.slice(6)) as Record<string, unknown>);
      }
    }
  })().catch(() => undefined);
  return { messages, ended };
}
