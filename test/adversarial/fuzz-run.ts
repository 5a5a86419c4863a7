import type { TaskStore } from '../../src/store/types.js';
import { rpc } from '../support/stateless.js';
import { openSession, postRaw, startWireServer, storedState } from '../support/wire-server.js';
import { fuzzMessages, type FuzzRequest } from './fuzz-messages.js';

/** What a fuzz run found: the figures the issue asks for, and the first findings in full. */
export interface FuzzFigures {
  store: string;
  seed: number;
  messages: number;
  /** The server stopped answering (a probe after a message failed). */
  crashes: number;
  fiveHundreds: number;
  /** An answer that is neither a well-formed JSON-RPC message nor a plain HTTP 4xx error. */
  malformed: number;
  /** -32603 answers, or database / stack text in a message. */
  internal: number;
  /** A rejected call after which the stored tasks or outbox differ. */
  stateChanges: number;
  /** A success naming the victim's task, or a 2xx on the victim's session. */
  breaches: number;
  findings: string[];
  byStatus: Record<string, number>;
}

const ATTACKER = 'token-carol';
const VICTIM = 'token-alice';
const LEAK = /SQLITE_|violates|constraint|syntax error|relation "|invalid byte sequence|ZodError|\bat \S+ \(|node:internal|stack/i;
const STREAM_WAIT_MS = 400;

/**
 * Starts tasklatch over `store` (no workers, so that only requests change what is stored), gives
 * the victim a session and tasks, then sends `count` generated messages as another caller, one
 * at a time, and judges each answer.
 */
export async function runFuzz(store: TaskStore, storeName: string, seed: number, count: number): Promise<FuzzFigures> {
  const wire = await startWireServer(store, { execute: false });
  const url = wire.http.url;
  const figures: FuzzFigures = {
    store: storeName,
    seed,
    messages: 0,
    crashes: 0,
    fiveHundreds: 0,
    malformed: 0,
    internal: 0,
    stateChanges: 0,
    breaches: 0,
    findings: [],
    byStatus: {},
  };
  const find = (kind: keyof FuzzFigures, what: string) => {
    (figures[kind] as number) += 1;
    if (figures.findings.length < 20) figures.findings.push(`${kind}: ${what}`);
  };
  try {
    const victim = await openSession(url, VICTIM);
    const victimTaskIds: string[] = [];
    const victimKeys = ['victim-key-1', 'victim-key-2'];
    for (const key of victimKeys) {
      const created = await rpc(url, 'tools/call', { name: 'hold', arguments: {} }, { token: VICTIM, headers: { 'idempotency-key': key } });
      victimTaskIds.push(created.result?.taskId as string);
    }
    const own = await openSession(url, ATTACKER);
    const next = fuzzMessages(seed, { victimTaskIds, victimKeys, victimSession: victim.sessionId, ownSession: own.sessionId }, ATTACKER);
    for (let i = 0; i < count; i++) {
      const request = next();
      const before = await storedState(wire.store);
      const judged = await send(url, request);
      figures.messages += 1;
      figures.byStatus[judged.status] = (figures.byStatus[judged.status] ?? 0) + 1;
      if (judged.status >= 500) find('fiveHundreds', `${judged.status} for ${request.label}`);
      if (judged.problem !== null) find('malformed', `${judged.problem} for ${request.label}`);
      if (judged.status === 202 && asksForAnswer(request.body)) find('malformed', `202 for a request that needs an answer: ${request.label}`);
      for (const m of judged.messages) {
        const text = JSON.stringify(m.error ?? '');
        if (m.error?.code === -32603 || LEAK.test(text)) find('internal', `${text.slice(0, 200)} for ${request.label}`);
        const shown = JSON.stringify(m.result ?? (m as { params?: unknown }).params ?? null);
        if (victimTaskIds.some((id) => shown.includes(id))) find('breaches', `an answer shows a victim task for ${request.label}`);
      }
      if (request.headers['mcp-session-id'] === victim.sessionId && judged.status < 300 && judged.status !== 202) {
        find('breaches', `${judged.status} on the victim's session for ${request.label}`);
      }
      if (!judged.accepted && JSON.stringify(await storedState(wire.store)) !== JSON.stringify(before)) find('stateChanges', request.label);
      // Still alive, and the victim's session still works for the victim.
      const probe = await postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: `probe-${i}`, method: 'ping' }), victim.headers).catch(() => null);
      if (probe === null || probe.status !== 200) find('crashes', `probe after ${request.label} answered ${probe?.status ?? 'nothing'}`);
      await probe?.text();
    }
  } finally {
    await wire.close();
  }
  return figures;
}

/** Whether a body holds a request (a method and an id), or is an empty batch: neither may be answered 202. */
function asksForAnswer(body: string | undefined): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body ?? '');
  } catch {
    return true;
  }
  const messages = Array.isArray(parsed) ? (parsed as unknown[]) : [parsed];
  if (messages.length === 0) return true;
  return messages.some((m) => typeof m === 'object' && m !== null && 'method' in m && 'id' in m);
}

interface Judged {
  status: number;
  messages: Array<{ result?: unknown; error?: { code: number; message: string } }>;
  /** Whether any message of the answer is a success (a call that may change state legitimately). */
  accepted: boolean;
  problem: string | null;
}

async function send(url: string, request: FuzzRequest): Promise<Judged> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), STREAM_WAIT_MS);
  try {
    const res = await fetch(url, { method: request.httpMethod, headers: request.headers, body: request.body, signal: abort.signal });
    const stream = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    let text = '';
    try {
      text = await res.text();
    } catch {
      // A stream still open when the wait ran out: judge what arrived (nothing, here).
      if (!stream) return { status: res.status, messages: [], accepted: false, problem: 'body cut short' };
    }
    return judge(res.status, stream, text);
  } catch (error) {
    // The headers did not come within the wait: a held request (an SSE stream that sent nothing yet).
    return { status: 0, messages: [], accepted: true, problem: abort.signal.aborted ? null : `no answer: ${String(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

function judge(status: number, stream: boolean, text: string): Judged {
  if (status === 202 || (status === 200 && stream && text === ''))
    return { status, messages: [], accepted: true, problem: text === '' ? null : 'a 202 with a body' };
  const raw = stream
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data: ') && l.length > 6)
        .map((l) => l.slice(6))
    : [text];
  const messages: Judged['messages'] = [];
  for (const item of raw) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(item);
    } catch {
      return { status, messages, accepted: false, problem: `not JSON (HTTP ${status}): ${item.slice(0, 80)}` };
    }
    for (const m of Array.isArray(parsed) ? (parsed as unknown[]) : [parsed]) {
      const problem = wellFormed(status, m);
      if (problem !== null) return { status, messages, accepted: false, problem };
      messages.push(m as Judged['messages'][number]);
    }
  }
  const accepted = messages.some((m) => m.result !== undefined);
  return { status, messages, accepted, problem: null };
}

/** A JSON-RPC response or notification, or a plain `{ error: string }` for the HTTP-level refusals. */
function wellFormed(status: number, m: unknown): string | null {
  if (typeof m !== 'object' || m === null) return `HTTP ${status}: not an object`;
  const o = m as Record<string, unknown>;
  if (o.jsonrpc === undefined && typeof o.error === 'string' && status >= 400 && status < 500) return null;
  if (o.jsonrpc !== '2.0') return `HTTP ${status}: jsonrpc is ${JSON.stringify(o.jsonrpc)}`;
  if (typeof o.method === 'string') return null;
  if ('result' in o === 'error' in o) return `HTTP ${status}: neither one of result and error`;
  if ('error' in o) {
    const e = o.error as { code?: unknown; message?: unknown };
    if (!Number.isInteger(e.code) || typeof e.message !== 'string') return `HTTP ${status}: malformed error ${JSON.stringify(e).slice(0, 100)}`;
    if (e.message.length > 1000) return `HTTP ${status}: error message of ${e.message.length} characters`;
    if (status < 400 && status !== 200) return `HTTP ${status} with an error`;
  } else if (status >= 400) return `HTTP ${status} with a result`;
  return null;
}
