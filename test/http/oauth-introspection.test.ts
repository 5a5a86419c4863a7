import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/http-server.js';
import type { RefusalReason } from '../../src/http/oauth/access-token.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { RESOURCE_SERVER_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { rpc } from '../support/stateless.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

let as: AuthorizationServer;
let wire: WireServer;
let resource: string;
const refusedFor: RefusalReason[] = [];
const counts = { tokens: 0, introspections: 0, isolation: 0 };

beforeAll(async () => {
  as = await startAuthorizationServer([
    { id: 'acme-opaque', tenant: 'acme', scope: 'tasks other', opaque: true },
    { id: 'globex-opaque', tenant: 'globex', scope: 'tasks', opaque: true },
    { id: 'acme-jwt', tenant: 'acme', scope: 'tasks' },
  ]);
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  resource = `http://127.0.0.1:${port}/mcp`;
  const introspection = { url: `${as.issuer}/token/introspection`, clientId: RESOURCE_SERVER_CLIENT.id, clientSecret: RESOURCE_SERVER_CLIENT.secret };
  wire = await startWireServer(new MemoryStore(), {
    http: { port, tokens: undefined, oauth: { issuer: as.issuer, resource, scopes: ['tasks'], introspection, onRefusal: (r) => void refusedFor.push(r) } },
  });
});
afterAll(async () => {
  await wire.close();
  await as.close();
  console.log(
    `Introspection: ${counts.tokens} tokens tried, ${as.introspections()} introspection requests, refusals ${refusedFor.join(', ')}, ${counts.isolation} isolation checks`,
  );
});

const token = (client: string, scope = 'tasks', aud = resource) => (counts.tokens++, as.token(client, aud, scope));

describe('opaque access tokens, by RFC 7662 introspection', () => {
  it('admit their caller on both generations, keep tenants apart, and are asked about once while cached', async () => {
    const acme = await token('acme-opaque');
    expect(acme.split('.')).toHaveLength(1);
    const before = as.introspections();
    const created = await rpc(resource, 'tools/call', { name: 'hold', arguments: {} }, { token: acme });
    const taskId = created.result!.taskId as string;
    expect((await rpc(resource, 'tasks/get', { taskId }, { token: acme })).result?.status).toBe('working');
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { Authorization: `Bearer ${acme}` } } }));
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('working');
    expect(as.introspections() - before).toBe(1);
    const globex = await token('globex-opaque');
    expect((await rpc(resource, 'tasks/get', { taskId }, { token: globex })).error?.message).toMatch(/Task not found/);
    counts.isolation++;
    await rpc(resource, 'tasks/cancel', { taskId }, { token: acme });
    await client.close();
  });

  it('refuse an unknown token, one for another audience, one without the scope', async () => {
    const cases: Array<[string, number, RefusalReason]> = [
      ['no-such-token-at-all', 401, 'inactive'],
      [await token('acme-opaque', 'tasks', 'https://other.example/mcp'), 401, 'audience'],
      [await token('acme-opaque', 'other'), 403, 'scope'],
    ];
    for (const [bearer, status, reason] of cases) {
      const before = refusedFor.length;
      expect((await rpc(resource, 'tools/list', {}, { token: bearer })).status).toBe(status);
      expect(refusedFor.slice(before)).toEqual([reason]);
    }
  });

  it('leave JWTs to local verification', async () => {
    const before = as.introspections();
    expect((await rpc(resource, 'tools/list', {}, { token: await token('acme-jwt') })).status).toBe(200);
    expect(as.introspections()).toBe(before);
  });

  it('answer 503 when the endpoint refuses the resource server itself', async () => {
    const http = await startHttpServer({
      runtime: wire.server.runtime,
      taskServer: wire.server,
      host: '127.0.0.1',
      port: 0,
      oauth: {
        issuer: as.issuer,
        resource,
        introspection: { url: `${as.issuer}/token/introspection`, clientId: RESOURCE_SERVER_CLIENT.id, clientSecret: 'wrong' },
      },
    });
    try {
      expect((await rpc(http.url, 'tools/list', {}, { token: await token('acme-opaque') })).status).toBe(503);
    } finally {
      await http.close();
    }
  });
});
