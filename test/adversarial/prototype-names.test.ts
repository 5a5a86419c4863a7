import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { rpc } from '../support/stateless.js';
import { messageOf, openSession, postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

/** Every name a plain object answers without owning it. */
const NAMES = Object.getOwnPropertyNames(Object.prototype);
const token = 'token-alice';
let wire: WireServer;
let session: Record<string, string>;

beforeAll(async () => {
  wire = await startWireServer(new MemoryStore());
  session = (await openSession(wire.http.url, token)).headers;
});

afterAll(async () => {
  await wire.close();
});

let nextId = 1;
async function legacy(method: string, params: Record<string, unknown>) {
  const res = await postRaw(wire.http.url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }), session);
  return { status: res.status, message: await messageOf(res) };
}

/** No server fault: the answer is below 500 and no -32603, and it is the one expected. */
function expectRefused(status: number, error: { code: number; message: string } | undefined, code: number) {
  expect(status).toBeLessThan(500);
  expect(error?.code).not.toBe(-32603);
  expect(error?.code).toBe(code);
}

describe('names of Object.prototype sent by a client', () => {
  it.each(NAMES)('%s as a method: "method not found" on both generations', async (name) => {
    const old = await legacy(name, {});
    expectRefused(old.status, old.message?.error, -32601);
    const modern = await rpc(wire.http.url, name, {}, { token });
    expectRefused(modern.status, modern.error, -32601);
    expect(modern.error?.message).not.toContain('[object');
  });

  it.each(NAMES)('%s as a tool name: "unknown tool" on both generations', async (name) => {
    const old = await legacy('tools/call', { name, arguments: {} });
    expect(old.status).toBeLessThan(500);
    expect(old.message?.error?.code ?? (old.message?.result as { isError?: boolean } | undefined)?.isError).toBeTruthy();
    expect(old.message?.error?.code).not.toBe(-32603);
    expect(JSON.stringify(old.message)).toContain(name);
    const modern = await rpc(wire.http.url, 'tools/call', { name, arguments: {} }, { token });
    expectRefused(modern.status, modern.error, -32602);
    expect(modern.error?.message).toBe(`Unknown tool: ${name}`);
  });

  it.each(NAMES)('%s as a task id: "task not found" on both generations', async (name) => {
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const old = await legacy(method, { taskId: name });
      expectRefused(old.status, old.message?.error, -32602);
    }
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const modern = await rpc(wire.http.url, method, { taskId: name }, { token });
      expectRefused(modern.status, modern.error, -32602);
      expect(modern.error?.message).toBe('Task not found');
    }
    const update = await rpc(wire.http.url, 'tasks/update', { taskId: name, inputResponses: { [name]: { action: 'accept', content: {} } } }, { token });
    expectRefused(update.status, update.error, -32602);
  });

  it.each(NAMES)('%s as a _meta key: taken like any other key on both generations', async (name) => {
    const meta = JSON.parse(`{${JSON.stringify(name)}: {"x": 1}}`) as Record<string, unknown>;
    const old = await legacy('tools/list', { _meta: meta });
    expect(old.status).toBe(200);
    expect(old.message?.result?.tools).toBeDefined();
    const modern = await rpc(wire.http.url, 'tools/list', {}, { token, meta });
    expect(modern.status).toBe(200);
    expect(modern.result?.tools).toBeDefined();
  });
});
