import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { until } from '../support/until.js';
import { messageOf, openSession, postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

let wire: WireServer | undefined;

afterEach(async () => {
  await wire?.close();
  wire = undefined;
});

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});

describe('2025-11-25 session limits', () => {
  it('keeps nothing for an initialize refused with 406 or 415', async () => {
    wire = await startWireServer(new MemoryStore());
    const auth = { authorization: 'Bearer token-alice' };
    for (let i = 0; i < 20; i++) {
      const wrongAccept = await fetch(wire.http.url, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', accept: 'application/json' },
        body: INIT,
      });
      expect(wrongAccept.status).toBe(406);
      await wrongAccept.text();
      const wrongType = await postRaw(wire.http.url, INIT, { ...auth, 'content-type': 'text/plain' });
      expect(wrongType.status).toBe(415);
      await wrongType.text();
    }
    // No SDK server or transport stayed behind for any of the 40 refusals.
    expect(wire.server.openSessions).toBe(0);
    expect(wire.http.openSessions()).toBe(0);
  });

  it('caps sessions per caller (429) and in all (503), and a closed one frees its place', async () => {
    wire = await startWireServer(new MemoryStore(), { http: { sessions: { maxSessions: 3, maxPerCaller: 2 } } });
    const url = wire.http.url;
    const a1 = await openSession(url, 'token-alice');
    await openSession(url, 'token-alice');
    const third = await postRaw(url, INIT, { authorization: 'Bearer token-alice' });
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({ error: { code: -32000, message: expect.stringContaining('at most 2') as unknown } });
    await openSession(url, 'token-bob');
    const full = await postRaw(url, INIT, { authorization: 'Bearer token-carol' });
    expect(full.status).toBe(503);
    expect(await full.json()).toMatchObject({ error: { message: expect.stringContaining('Too many open sessions') as unknown } });
    expect(wire.server.openSessions).toBe(3);
    const deleted = await fetch(url, { method: 'DELETE', headers: a1.headers });
    expect(deleted.status).toBe(200);
    await openSession(url, 'token-carol');
    expect(wire.http.openSessions()).toBe(3);
  });

  it('closes and frees a session idle for the idle time; its id is then unknown', async () => {
    wire = await startWireServer(new MemoryStore(), { http: { sessions: { idleMs: 200 } } });
    const { headers } = await openSession(wire.http.url, 'token-alice');
    expect(wire.http.openSessions()).toBe(1);
    await until(() => (wire!.http.openSessions() === 0 ? true : undefined));
    expect(wire.server.openSessions).toBe(0);
    const late = await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), headers);
    expect(late.status).toBe(404);
    expect(await late.json()).toMatchObject({ error: { code: -32001 } });
  });

  it('does not close a session while it holds a response open', async () => {
    wire = await startWireServer(new MemoryStore(), { http: { sessions: { idleMs: 100 } }, execute: false });
    const { headers } = await openSession(wire.http.url, 'token-alice');
    const created = await messageOf(
      await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hold', arguments: {}, task: {} } }), headers),
    );
    const taskId = (created?.result?.task as { taskId: string }).taskId;
    const abort = new AbortController();
    const watching = wire.server.runtime.guard.context.changes.watchers;
    const held = postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId } }), headers, abort.signal);
    // Once the response is held open, several idle periods pass: the session stays.
    await until(() => (wire!.server.runtime.guard.context.changes.watchers > watching ? true : undefined));
    await new Promise((r) => setTimeout(r, 400));
    expect(wire.http.openSessions()).toBe(1);
    abort.abort();
    await held.catch(() => undefined);
    await until(() => (wire!.http.openSessions() === 0 ? true : undefined));
  });
});

describe('2025-11-25 envelope errors', () => {
  const cases: Array<[string, string, number, number, unknown]> = [
    ['bytes that are not JSON', '{"jsonrpc":', 400, -32700, null],
    ['an empty batch', '[]', 400, -32600, null],
    ['a number', '42', 400, -32600, null],
    ['a wrong jsonrpc version', '{"jsonrpc":"1.0","id":1,"method":"tools/list"}', 400, -32600, 1],
    ['a method that is not a string', '{"jsonrpc":"2.0","id":1,"method":7}', 400, -32600, 1],
    ['an id that is an object', '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', 400, -32600, null],
    ['an unknown member', '{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":1}', 400, -32600, 1],
    ['params that are not an object', '{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}', 400, -32602, 5],
    ['a malformed initialize', '{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":5}}', 400, -32602, 9],
    ['a batch with one bad message', '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0"}]', 400, -32600, null],
    ['a batch of well-formed messages', '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]', 400, -32600, null],
    ['a batch holding an initialize', `[${INIT}]`, 400, -32600, null],
  ];

  it.each(cases)('%s: refused with the JSON-RPC code the spec names and a short message', async (_name, body, status, code, id) => {
    wire ??= await startWireServer(new MemoryStore());
    const res = await postRaw(wire.http.url, body, { authorization: 'Bearer token-alice' });
    expect(res.status).toBe(status);
    const answer = (await res.json()) as { id: unknown; error: { code: number; message: string } };
    expect(answer).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
    expect(answer.error.message.length).toBeLessThan(200);
    expect(answer.error.message).not.toMatch(/"code":|expected.*received.*\[/s);
    expect(wire.server.openSessions).toBe(0);
  });

  it('agrees with the 2026-07-28 path: not JSON -32700, an empty batch -32600, params not an object -32602', async () => {
    wire ??= await startWireServer(new MemoryStore());
    const modern = { authorization: 'Bearer token-alice', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    const cases: Array<[string, number]> = [
      ['{"jsonrpc":', -32700],
      ['[]', -32600],
      ['[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]', -32600],
      ['{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}', -32602],
    ];
    for (const [body, code] of cases) {
      const res = await postRaw(wire.http.url, body, modern);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(code);
    }
  });

  it('refuses a batch of 100 well-formed task calls inside a session whole: none of them is handled', async () => {
    wire = await startWireServer(new MemoryStore(), { execute: false });
    const { headers } = await openSession(wire.http.url, 'token-alice');
    const calls = Array.from({ length: 100 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 100 + i,
      method: 'tools/call',
      params: { name: 'hold', arguments: {}, task: {} },
    }));
    const batch = await postRaw(wire.http.url, JSON.stringify(calls), headers);
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({ id: null, error: { code: -32600, message: expect.stringContaining('batches') as unknown } });
    const listed = await messageOf(await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tasks/list' }), headers));
    expect(listed?.result).toMatchObject({ tasks: [] });
    // The session still takes one message per POST.
    const one = await messageOf(await postRaw(wire.http.url, JSON.stringify(calls[0]), headers));
    expect(one?.result).toMatchObject({ task: { status: 'working' } });
  });

  it('the same inside a session, and a refused request is logged once without a stack', async () => {
    wire = await startWireServer(new MemoryStore());
    const { headers } = await openSession(wire.http.url, 'token-alice');
    const before = wire.logs.length;
    const res = await postRaw(wire.http.url, '{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":"x"}', headers);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ id: 4, error: { code: -32602 } });
    const empty = await postRaw(wire.http.url, '[]', headers);
    expect(empty.status).toBe(400);
    await until(() => (wire!.logs.length >= before + 2 ? true : undefined));
    // And a refusal inside a 200 answer (an unknown task id) is one line too.
    const missing = await postRaw(wire.http.url, '{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"nope"}}', headers);
    expect((await messageOf(missing))?.error).toMatchObject({ code: -32602, message: 'Task not found' });
    await until(() => (wire!.logs.length >= before + 3 ? true : undefined));
    const refused = wire.logs.slice(before).filter((l) => l.msg === 'request refused');
    expect(refused.map((l) => l.code)).toEqual([-32602, -32600, -32602]);
    expect(refused[0]).toMatchObject({ status: 400, id: 4, method: 'tasks/get' });
    expect(refused[2]).toMatchObject({ status: 200, id: 5, reason: 'Task not found' });
    expect(wire.logs.some((l) => 'err' in l)).toBe(false);
  });
});
