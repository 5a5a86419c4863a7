import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { rpc } from '../support/stateless.js';
import { messageOf, openSession, postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

let wire: WireServer;
let failing = false;

beforeAll(async () => {
  const inner = new MemoryStore();
  // A store whose reads fail the way a database does, with its own text in the error.
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'get' && typeof value === 'function') {
        return (...args: unknown[]) =>
          failing ? Promise.reject(new Error('relation "tasks" does not exist')) : (value as (...a: unknown[]) => unknown).apply(target, args);
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as TaskStore;
  wire = await startWireServer(store, { execute: false });
});

afterAll(async () => {
  await wire.close();
});

describe('a server fault', () => {
  it('answers -32603 "Internal error" without the fault text on both generations, and logs each with its stack', async () => {
    const { headers } = await openSession(wire.http.url, 'token-alice');
    const created = await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: {} }, { token: 'token-alice' });
    const taskId = created.result?.taskId as string;
    failing = true;
    const before = wire.logs.length;
    const legacy = await messageOf(await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId } }), headers));
    const modern = await rpc(wire.http.url, 'tasks/get', { taskId }, { token: 'token-alice' });
    failing = false;
    expect(legacy?.error).toEqual({ code: -32603, message: 'Internal error' });
    expect(modern.error).toEqual({ code: -32603, message: 'Internal error' });
    const faults = wire.logs.slice(before).filter((l) => l.level === 50);
    expect(faults).toHaveLength(2);
    for (const line of faults) expect(String((line.err as { stack?: string } | undefined)?.stack)).toContain('relation "tasks" does not exist');
  });
});
