import { prng } from '../support/sqlite-race-plan.js';

/** What the fuzzer knows of the victim (another caller) and of itself, to aim at. */
export interface Targets {
  /** Task ids of the victim. */
  victimTaskIds: string[];
  /** The victim's idempotency keys. */
  victimKeys: string[];
  /** The victim's 2025-11-25 session id. */
  victimSession: string;
  /** The attacker's own session id. */
  ownSession: string;
}

/** One hostile HTTP request: method, headers and raw body bytes. */
export interface FuzzRequest {
  generation: '2025' | '2026';
  httpMethod: 'POST' | 'GET' | 'DELETE';
  headers: Record<string, string>;
  body: string | undefined;
  /** A short label of what was generated, for findings. */
  label: string;
}

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'tasks/get',
  'tasks/result',
  'tasks/cancel',
  'tasks/list',
  'tasks/update',
  'server/discover',
  'subscriptions/listen',
  'resources/read',
  'notifications/initialized',
  'notifications/cancelled',
];
const TOOLS = ['export_ledger', 'summarize', 'lookup', 'bulky', 'nope', '', '../etc/passwd'];
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';
const KEY_META = 'io.tasklatch/idempotency-key';

/**
 * A seeded generator of hostile JSON-RPC traffic for both generations: bad envelopes, wrong
 * types, huge and deep values, odd ids, unicode edge cases (NUL, lone surrogates, BOM, RTL
 * marks), random and real methods, batches, wrong or missing headers, and the victim's ids,
 * keys and session aimed at from another caller's token. The same seed gives the same traffic.
 */
export function fuzzMessages(seed: number, targets: Targets, token: string): () => FuzzRequest {
  const rand = prng(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const chance = (p: number) => rand() < p;

  const oddString = (): string =>
    pick([
      () => '',
      () => 'a'.repeat(1 + int(300)),
      () => 'x'.repeat(5000 + int(200_000)),
      () => '\u0000',
      () => `id\u0000${int(9)}`,
      () => '\ud800',
      () => 'tail\udfff',
      () => '\ufeff\u202e\u200d',
      () => '🦀'.repeat(1 + int(50)),
      () => `${pick(targets.victimTaskIds)}`,
      () => `${pick(targets.victimTaskIds)} `,
      () => pick(targets.victimTaskIds).toUpperCase(),
      () => "' OR 1=1 --",
      () => '%00%ff',
      () => crypto.randomUUID(),
    ])();

  const deep = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let i = 0; i < depth; i++) value = chance(0.5) ? [value] : { d: value };
    return value;
  };

  const oddValue = (): unknown =>
    pick([
      () => null,
      () => true,
      () => int(1e9) - 5e8,
      () => 1.5,
      () => 1e308,
      () => -0,
      () => Number.MAX_SAFE_INTEGER + 2,
      oddString,
      () => [],
      () => [oddString(), int(5)],
      () => ({}),
      () => ({ __proto__: { polluted: true }, constructor: { prototype: 1 } }),
      () => deep(10 + int(300)),
      () => Object.fromEntries(Array.from({ length: 1 + int(2000) }, (_, i) => [`k${i}`, i])),
    ])();

  const oddId = (): unknown => pick([1, 0, -1, 'id', '', null, 1.5, true, {}, [], 2 ** 60, oddString(), int(1000)]);

  const taskId = (): unknown => (chance(0.6) ? pick(targets.victimTaskIds) : chance(0.5) ? oddString() : oddValue());

  const params = (method: string): unknown => {
    if (chance(0.15)) return oddValue();
    switch (method) {
      case 'tools/call':
        return {
          name: chance(0.8) ? pick(TOOLS) : oddValue(),
          arguments: chance(0.3) ? { month: pick(['2026-06', 'bad', oddString()]), rows: int(5), size: int(100) } : oddValue(),
          ...(chance(0.6) ? { task: chance(0.7) ? { ttl: pick([0, -1, 1, 1e15, 'x', null, 60_000]) } : oddValue() } : {}),
          ...(chance(0.5) ? { _meta: { [KEY_META]: chance(0.5) ? pick(targets.victimKeys) : oddValue(), progressToken: oddId() } } : {}),
        };
      case 'tasks/get':
      case 'tasks/cancel':
      case 'tasks/update':
        return { taskId: taskId(), ...(method === 'tasks/update' ? { inputResponses: chance(0.5) ? { k: oddValue() } : oddValue() } : {}) };
      case 'tasks/result':
        // Never the attacker's own working task: that would be held open, by design.
        return { taskId: chance(0.7) ? pick(targets.victimTaskIds) : oddString() };
      case 'tasks/list':
        return chance(0.5) ? { cursor: oddString() } : { cursor: oddValue() };
      case 'initialize':
        return chance(0.5)
          ? { protocolVersion: oddValue(), capabilities: oddValue(), clientInfo: oddValue() }
          : { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: oddString().slice(0, 100), version: '1' } };
      case 'subscriptions/listen':
        return { notifications: chance(0.7) ? { taskIds: [pick(targets.victimTaskIds), oddString()] } : oddValue() };
      case 'notifications/cancelled':
        return { requestId: oddId(), reason: oddString().slice(0, 50) };
      default:
        return chance(0.5) ? {} : { x: oddValue() };
    }
  };

  const message = (generation: '2025' | '2026'): unknown => {
    const method = chance(0.85) ? pick(METHODS) : chance(0.5) ? oddString() : oddValue();
    const p = params(typeof method === 'string' ? method : 'x');
    const envelope: Record<string, unknown> = { jsonrpc: chance(0.92) ? '2.0' : pick(['1.0', 2, null, '']), method };
    if (chance(0.9)) envelope.id = chance(0.8) ? int(1_000_000) : oddId();
    if (chance(0.9)) envelope.params = p;
    if (generation === '2026' && typeof envelope.params === 'object' && envelope.params !== null && !Array.isArray(envelope.params) && chance(0.85)) {
      const meta = chance(0.85)
        ? {
            [META_VERSION]: chance(0.9) ? '2026-07-28' : oddValue(),
            [META_CAPS]: chance(0.8) ? { extensions: { 'io.modelcontextprotocol/tasks': {} } } : oddValue(),
          }
        : oddValue();
      envelope.params = { ...envelope.params, _meta: meta };
    }
    if (chance(0.05)) envelope[oddString().slice(0, 20) || 'extra'] = oddValue();
    if (chance(0.05)) delete envelope.jsonrpc;
    if (chance(0.04)) envelope.result = oddValue();
    return envelope;
  };

  const body = (generation: '2025' | '2026'): string => {
    const roll = rand();
    if (roll < 0.05) return pick(['', '{', '{"jsonrpc":"2.0",', 'null', '[', 'tru', '\u0000', '{"a":1}}', '\ufeff{}', 'x'.repeat(100)]);
    if (roll < 0.1) return JSON.stringify(oddValue());
    if (roll < 0.17) return JSON.stringify(chance(0.2) ? [] : Array.from({ length: 1 + int(4) }, () => message(generation)));
    const text = JSON.stringify(message(generation));
    // Lone surrogates and NUL as JSON escapes: JSON.stringify would write them escaped anyway.
    return chance(0.05) ? text.replace(/"([a-z])/, '"\\ud800$1') : text;
  };

  return () => {
    const generation = chance(0.5) ? '2025' : '2026';
    const headers: Record<string, string> = {
      'content-type': chance(0.93) ? 'application/json' : pick(['text/plain', 'application/json; charset=latin1', '', 'application/jsonx']),
      accept: chance(0.93) ? 'application/json, text/event-stream' : pick(['application/json', 'text/html', '*/*', '']),
      authorization: chance(0.95) ? `Bearer ${token}` : pick(['Bearer nope', 'Basic abc', '', `Bearer ${token} extra`]),
    };
    let httpMethod: FuzzRequest['httpMethod'] = 'POST';
    if (generation === '2025') {
      if (chance(0.7)) headers['mcp-session-id'] = chance(0.75) ? targets.ownSession : chance(0.6) ? targets.victimSession : oddString().slice(0, 300);
      if (chance(0.8)) headers['mcp-protocol-version'] = chance(0.9) ? '2025-11-25' : pick(['1999-01-01', '', '2025-06-18']);
      if (chance(0.06)) httpMethod = pick(['GET', 'DELETE'] as const);
      // DELETE of its own session would end the attacker's traffic: only the victim's or odd ids.
      if (httpMethod === 'DELETE' && headers['mcp-session-id'] === targets.ownSession) headers['mcp-session-id'] = targets.victimSession;
    } else {
      headers['mcp-protocol-version'] = chance(0.9) ? '2026-07-28' : pick(['2026-13-01', '', '2027-01-01']);
      if (chance(0.8)) headers['mcp-method'] = chance(0.85) ? pick(METHODS) : oddString().slice(0, 100);
      if (chance(0.3)) headers['mcp-name'] = oddString().slice(0, 100);
      if (chance(0.1)) headers['idempotency-key'] = chance(0.5) ? pick(targets.victimKeys) : oddString().slice(0, 400);
      if (chance(0.03)) httpMethod = pick(['GET', 'DELETE'] as const);
    }
    // Header values must be ByteStrings for fetch: drop what is not.
    for (const [name, value] of Object.entries(headers)) if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) delete headers[name];
    const text = httpMethod === 'POST' ? body(generation) : undefined;
    return { generation, httpMethod, headers, body: text, label: `${generation} ${httpMethod} ${(text ?? '').slice(0, 120)}` };
  };
}
