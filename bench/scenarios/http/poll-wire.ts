import type { Generation, PollTarget } from './protocol.js';

/** The request bytes a poll sends on each wire, written once and reused by every poller. */

export interface WireReply {
  status: number;
  body: string;
  sessionId: string | null;
}

export type Send = (headers: Record<string, string>, body: string) => Promise<WireReply>;

/** A 2025-11-25 session: the headers every request on it carries. */
export interface Session {
  headers: Record<string, string>;
}

const ACCEPT = 'application/json, text/event-stream';
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

/** The 2026-07-28 `_meta` of a request that declares the tasks extension. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

/** initialize, then notifications/initialized, as the SDK client does. */
export async function openSession(send: Send, token: string): Promise<Session> {
  const base = { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${token}` };
  const init = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'tasklatch-bench', version: '1.0.0' } },
  };
  const opened = await send(base, JSON.stringify(init));
  if (opened.status !== 200 || opened.sessionId === null) throw new Error(`initialize answered ${opened.status}: ${opened.body.slice(0, 200)}`);
  const headers = { ...base, 'mcp-session-id': opened.sessionId, 'mcp-protocol-version': LEGACY };
  const ack = await send(headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  if (ack.status !== 202) throw new Error(`notifications/initialized answered ${ack.status}`);
  return { headers };
}

export function pollHeaders(generation: Generation, target: PollTarget, session: Session | null): Record<string, string> {
  if (generation === '2025') {
    if (session === null) throw new Error('a 2025-11-25 poll needs its session');
    return session.headers;
  }
  return {
    'content-type': 'application/json',
    accept: ACCEPT,
    authorization: `Bearer ${target.token}`,
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tasks/get',
    'mcp-name': target.taskId,
  };
}

export function pollBody(generation: Generation, target: PollTarget, id: number): string {
  const params = generation === '2025' ? { taskId: target.taskId } : { taskId: target.taskId, _meta: MODERN_META };
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tasks/get', params });
}
