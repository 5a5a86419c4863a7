import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authFront, type AuthRequest, type HttpAuthenticate } from '../../src/http/auth-front.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { Principal } from '../../src/tools/principal.js';
import { rpc } from '../support/stateless.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// API keys "in a database": looked up after a timer, as a pool query would answer.
const KEYS = new Map<string, Principal>([
  ['key-acme', { tenant: 'acme', subject: 'svc' }],
  ['key-globex', { tenant: 'globex', subject: 'svc' }],
]);
const seen: AuthRequest[] = [];
const apiKeys: HttpAuthenticate = async (request) => {
  seen.push(request);
  await new Promise((resolve) => setTimeout(resolve, 15));
  const key = request.headers['x-api-key'];
  return (typeof key === 'string' ? KEYS.get(key) : undefined) ?? null;
};

let wire: WireServer;
beforeAll(async () => {
  wire = await startWireServer(new MemoryStore(), { http: { tokens: undefined, authenticate: apiKeys } });
});
afterAll(async () => wire.close());

const withKey = (key: string) => ({ headers: { 'x-api-key': key } });

describe('a custom async authenticate', () => {
  it('admits on 2026-07-28 and keeps tenants apart', async () => {
    const created = await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: {} }, withKey('key-acme'));
    expect(created.status).toBe(200);
    const taskId = created.result!.taskId as string;
    expect((await rpc(wire.http.url, 'tasks/get', { taskId }, withKey('key-acme'))).result?.status).toBe('working');
    const other = await rpc(wire.http.url, 'tasks/get', { taskId }, withKey('key-globex'));
    expect(other.error?.message).toMatch(/Task not found/);
    await rpc(wire.http.url, 'tasks/cancel', { taskId }, withKey('key-acme'));
    const last = seen.at(-1)!;
    expect([last.method, last.url.pathname, last.headers['x-api-key']]).toEqual(['POST', '/mcp', 'key-acme']);
  });

  it('refuses on 2026-07-28 with 401 before the body is read', async () => {
    for (const options of [withKey('key-nobody'), {}]) {
      const refused = await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: {} }, options);
      expect(refused.status).toBe(401);
    }
    const bad = await fetch(wire.http.url, { method: 'POST', headers: { 'x-api-key': 'nope', authorization: 'Bearer nope' }, body: '{}' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('admits and refuses on 2025-11-25 through the SDK client', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(wire.http.url), { requestInit: { headers: { 'x-api-key': 'key-acme' } } }));
    const created = await client.request({ method: 'tools/call', params: { name: 'hold', arguments: {}, task: {} } }, CreateTaskResultSchema);
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('working');
    const globex = new Client({ name: 'test', version: '1.0.0' });
    await globex.connect(new StreamableHTTPClientTransport(new URL(wire.http.url), { requestInit: { headers: { 'x-api-key': 'key-globex' } } }));
    await expect(globex.experimental.tasks.getTask(created.task.taskId)).rejects.toThrow(/Task not found/);
    await client.experimental.tasks.cancelTask(created.task.taskId);
    const stranger = new Client({ name: 'test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(wire.http.url), { requestInit: { headers: { 'x-api-key': 'key-nobody' } } });
    await expect(stranger.connect(transport)).rejects.toThrow(/401|Unauthorized/i);
    await Promise.all([client.close(), globex.close()]);
  });

  it('is one of tokens, authenticate and oauth: naming two is refused', async () => {
    expect(() => authFront({ tokens: KEYS, authenticate: apiKeys })).toThrow(/alternatives/);
  });
});
