import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authKeyOf, type Principal } from '../../src/core/principal.js';
import type { AuthRequest } from '../../src/http/auth-front.js';
import type { TaskStore } from '../../src/store/types.js';
import { rpc } from '../support/stateless.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { messageOf, openSession, postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

// Callers whose names are near each other (case, normalization, a surrogate pair and what a lone
// surrogate becomes, trailing spaces, separators): each is its own caller on every store.
const NEAR: Principal[] = [
  { tenant: 'acme', subject: 'alice' },
  { tenant: 'ACME', subject: 'alice' },
  { tenant: 'acme', subject: 'Alice' },
  { tenant: 'acme', subject: 'alice ' },
  { tenant: 'acme ', subject: 'alice' },
  { tenant: 'acme', subject: '\u00e9' },
  { tenant: 'acme', subject: 'e\u0301' },
  { tenant: 'acme', subject: 'u\ud83d\ude00' },
  { tenant: 'acme', subject: 'u\ufffd' },
  { tenant: 'acme', subject: 'u' },
  { tenant: 'acme:eu', subject: 'x' },
  { tenant: 'acme_eu', subject: 'x' },
  { tenant: 'acme.eu', subject: 'x' },
  { tenant: 'a', subject: 'b/c' },
  { tenant: 'a', subject: 'b_c' },
];

// Callers no store may see: an unpaired surrogate (two of which a database stores alike), a NUL
// or another control character, a part past its bound.
const HOSTILE: Principal[] = [
  { tenant: 'u\ud800', subject: 's' },
  { tenant: 'u\udc00', subject: 's' },
  { tenant: 'acme', subject: 'u\ud800' },
  { tenant: 'acme', subject: 'u\udc00' },
  { tenant: 'acme', subject: 'ali\u0000ce' },
  { tenant: 'ev\u0000il', subject: 'x' },
  { tenant: 'acme', subject: 'a\u0085' },
  { tenant: 'acme', subject: 'a\u007f' },
  { tenant: 't'.repeat(257), subject: 'x' },
  { tenant: 'acme', subject: 's'.repeat(1025) },
];

/** What a refused request answers over HTTP. */
type Refusal = { status: number; error?: unknown; error_description?: string };

const INNOCENT: Principal = { tenant: 'innocent', subject: 'bystander' };

const tokenOf = (group: string, i: number) => `${group}-${i}`;
const PRINCIPALS = new Map<string, Principal>([
  ...NEAR.map((p, i) => [tokenOf('near', i), p] as const),
  ...HOSTILE.map((p, i) => [tokenOf('hostile', i), p] as const),
  ['innocent', INNOCENT],
]);

/** A user's own scheme, as README shows it: the bearer token looked up, the principal returned as stored. */
const authenticate = ({ headers }: AuthRequest) => Promise.resolve(PRINCIPALS.get(headers.authorization?.replace(/^Bearer /, '') ?? '') ?? null);

// An unpaired surrogate, or a C0, DEL or C1 control character: what no store call may be given.
const MALFORMED = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The store, with every string of every call's arguments looked at: the malformed ones are kept in `seen`. */
function watchedStore(store: TaskStore): { store: TaskStore; seen: string[] } {
  const seen: string[] = [];
  const look = (value: unknown, depth: number): void => {
    if (typeof value === 'string') {
      if (MALFORMED.test(value) || value.length > 1200) seen.push(value);
    } else if (depth < 5 && typeof value === 'object' && value !== null) {
      for (const v of Array.isArray(value) ? value : Object.values(value)) look(v, depth + 1);
    }
  };
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        look(args, 0);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, seen };
}

describe.each(ALL_HARNESSES.filter((h) => (h.skip?.() ?? null) === null))('hostile and near principals on the $name store', (harness) => {
  let wire: WireServer;
  let seen: string[];
  /** token → the task it created. */
  const tasks = new Map<string, string>();

  beforeAll(async () => {
    const watched = watchedStore(await harness.open('hostile-principals'));
    seen = watched.seen;
    // No workers: a task stays `working` as its owner left it, so any change is a request's doing.
    wire = await startWireServer(watched.store, { execute: false, http: { tokens: undefined, authenticate } });
    for (const [i] of NEAR.entries()) {
      const token = tokenOf('near', i);
      const created = await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: {} }, { token });
      expect(created.result?.taskId, JSON.stringify(created)).toEqual(expect.any(String));
      tasks.set(token, created.result!.taskId as string);
    }
  });
  afterAll(async () => {
    await wire?.close();
  });

  it('near callers never see, list or cancel each other’s tasks', async () => {
    const url = wire.http.url;
    let checks = 0;
    // Every caller at once against every other's task: on PostgreSQL their reads share statements.
    await Promise.all(
      NEAR.map(async (_, i) => {
        const token = tokenOf('near', i);
        const others = [...tasks].filter(([owner]) => owner !== token);
        await Promise.all(
          others.map(async ([owner, taskId]) => {
            const got = await rpc(url, 'tasks/get', { taskId }, { token });
            expect(got.error?.message, `${token} read ${owner}'s task`).toMatch(/Task not found/);
            const cancelled = await rpc(url, 'tasks/cancel', { taskId }, { token });
            expect(cancelled.error?.message, `${token} cancelled ${owner}'s task`).toMatch(/Task not found/);
            checks++;
          }),
        );
        const session = await openSession(url, token);
        const res = await postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/list', params: {} }), session.headers);
        const listed = ((await messageOf(res))?.result?.tasks as Array<{ taskId: string }>).map((t) => t.taskId);
        expect(listed, `${token} lists`).toEqual([tasks.get(token)]);
      }),
    );
    expect(checks).toBe(NEAR.length * (NEAR.length - 1));
    // Every task is still its owner's, and still working: no cancel of another caller got through.
    for (const [token, taskId] of tasks) expect((await rpc(url, 'tasks/get', { taskId }, { token })).result?.status).toBe('working');
    // And each stored under its own auth key, none shared.
    const keys = NEAR.map(authKeyOf);
    expect(new Set(keys).size).toBe(NEAR.length);
    for (const [i, p] of NEAR.entries()) {
      const page = await wire.store.list({ authKey: authKeyOf(p), now: Date.now(), after: null, limit: 100 });
      expect(page.records.map((r) => r.taskId)).toEqual([tasks.get(tokenOf('near', i))]);
    }
  });

  it('malformed callers are refused with 401 naming the part, before any store call, while an innocent tenant beside them is served', async () => {
    const url = wire.http.url;
    const mine = await rpc(url, 'tools/call', { name: 'hold', arguments: {} }, { token: 'innocent' });
    const taskId = mine.result!.taskId as string;
    const hostile = HOSTILE.flatMap((p, i) => {
      const token = tokenOf('hostile', i);
      return [
        rpc(url, 'tools/call', { name: 'hold', arguments: {} }, { token }),
        rpc(url, 'tasks/get', { taskId }, { token }),
        rpc(url, 'tasks/cancel', { taskId }, { token }),
        postRaw(
          url,
          JSON.stringify({
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
          }),
          { authorization: `Bearer ${token}` },
        ).then(async (res) => ({ status: res.status, ...(res.status === 401 ? ((await res.json()) as object) : { body: await res.text() }) })),
      ].map((answer: Promise<unknown>) => answer.then((a) => ({ principal: p, answer: a as Refusal })));
    });
    // The innocent tenant polls and creates at the same time, on both generations.
    const innocent = Array.from({ length: 15 }, (_, n) =>
      n % 3 === 2 ? rpc(url, 'tools/call', { name: 'hold', arguments: {} }, { token: 'innocent' }) : rpc(url, 'tasks/get', { taskId }, { token: 'innocent' }),
    );
    const [refusals, served] = await Promise.all([Promise.all(hostile), Promise.all(innocent)]);
    for (const answer of served) {
      expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
      expect(answer.status).toBe(200);
    }
    for (const { principal, answer } of refusals) {
      expect(answer.status, JSON.stringify(principal)).toBe(401);
      expect(answer.error).toBe('invalid_token');
      const part = principal.tenant.length > 256 || /[^\x20-\x7e]/.test(principal.tenant) ? 'tenant' : 'subject';
      expect(answer.error_description).toMatch(new RegExp(`^the credential's ${part} `));
    }
    expect(served.filter((a) => a.result?.status === 'working')).toHaveLength(15);
    // No store call was ever given a malformed or oversized string.
    expect(seen).toEqual([]);
  });
});
