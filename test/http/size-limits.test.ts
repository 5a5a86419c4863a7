import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { rpc, settle } from '../support/stateless.js';
import { messageOf, openSession, postRaw, startWireServer, storedState, type WireServer } from '../support/wire-server.js';

let wire: WireServer;
let session: Record<string, string>;
const token = 'token-alice';

beforeAll(async () => {
  wire = await startWireServer(new MemoryStore(), { limits: { maxArgumentBytes: 1000, maxRequestBytes: 3000, maxResultBytes: 2000, maxStoredTasks: 3 } });
  session = (await openSession(wire.http.url, token)).headers;
});

afterAll(async () => {
  await wire.close();
});

let nextId = 100;
async function legacyCall(params: Record<string, unknown>) {
  return messageOf(await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params }), session));
}

describe('size bounds on both generations', () => {
  it('refuses arguments over the bound with -32602 and stores nothing', async () => {
    const before = await storedState(wire.store);
    const big = { note: 'n'.repeat(1200) };
    const legacy = await legacyCall({ name: 'hold', arguments: big, task: {} });
    expect(legacy?.error).toMatchObject({ code: -32602, message: expect.stringContaining('at most 1000') as unknown });
    const modern = await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: big }, { token });
    expect(modern.error).toMatchObject({ code: -32602, message: expect.stringContaining('at most 1000') as unknown });
    expect(await storedState(wire.store)).toEqual(before);
  });

  it('refuses a request over the stored-request bound (its _meta counts) with -32602 and stores nothing', async () => {
    const before = await storedState(wire.store);
    const params = { name: 'hold', arguments: { note: 'short' }, task: {}, _meta: { padding: 'p'.repeat(3500) } };
    const legacy = await legacyCall(params);
    expect(legacy?.error).toMatchObject({ code: -32602, message: expect.stringContaining('at most 3000 bytes') as unknown });
    expect(await storedState(wire.store)).toEqual(before);
  });

  it('ends a task whose result is over the bound failed, saying so, on both generations', async () => {
    const created = await rpc(wire.http.url, 'tools/call', { name: 'bulky', arguments: { size: 5000 } }, { token });
    const taskId = created.result?.taskId as string;
    const done = await settle(wire.http.url, taskId, { token });
    expect(done).toMatchObject({ status: 'failed', error: { code: -32603, message: expect.stringContaining('at most 2000 bytes') as unknown } });
    const legacy = await messageOf(
      await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tasks/result', params: { taskId } }), session),
    );
    expect(legacy?.error?.message).toContain('at most 2000 bytes');
  });

  it('refuses a task beyond the stored-task bound, finished ones included, with -32000 on both; a retry still replays', async () => {
    // One task (failed) stored by the test above; two more reach the bound of 3.
    const first = await rpc(wire.http.url, 'tools/call', { name: 'bulky', arguments: { size: 1 } }, { token, headers: { 'idempotency-key': 'k-bound' } });
    await settle(wire.http.url, first.result?.taskId as string, { token });
    const second = await legacyCall({ name: 'bulky', arguments: { size: 2 }, task: {} });
    expect(second?.result?.task).toBeDefined();
    const before = await storedState(wire.store);
    const legacy = await legacyCall({ name: 'bulky', arguments: { size: 3 }, task: {} });
    expect(legacy?.error).toMatchObject({ code: -32000, message: expect.stringContaining('Too many stored tasks') as unknown });
    const modern = await rpc(wire.http.url, 'tools/call', { name: 'bulky', arguments: { size: 3 } }, { token });
    expect(modern).toMatchObject({ status: 429, error: { code: -32000 } });
    expect(await storedState(wire.store)).toEqual(before);
    const retry = await rpc(wire.http.url, 'tools/call', { name: 'bulky', arguments: { size: 1 } }, { token, headers: { 'idempotency-key': 'k-bound' } });
    expect(retry.result?.taskId).toBe(first.result?.taskId);
    // Another caller has bounds of its own.
    const bob = await rpc(wire.http.url, 'tools/call', { name: 'bulky', arguments: { size: 1 } }, { token: 'token-bob' });
    expect(bob.result?.resultType).toBe('task');
  });
});
