import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { base64url, decodeJwt, exportJWK, generateKeyPair, importJWK, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/http-server.js';
import type { RefusalReason } from '../../src/http/oauth/access-token.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { freePort, startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { rpc } from '../support/stateless.js';
import { postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

const CLIENTS = [
  { id: 'acme-app', tenant: 'acme', scope: 'tasks other' },
  { id: 'globex-app', tenant: 'globex', scope: 'tasks other' },
  { id: 'tenantless-app', scope: 'tasks' },
];
const counts = { tokens: 0, accepted: 0, isolation: 0, refusals: {} as Partial<Record<RefusalReason | 'no token', number>> };
const refusedFor: RefusalReason[] = [];

let as: AuthorizationServer;
let wire: WireServer;
let resource: string;
let metadataUrl: string;

beforeAll(async () => {
  as = await startAuthorizationServer(CLIENTS);
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
  wire = await startWireServer(new MemoryStore(), {
    http: {
      port,
      tokens: undefined,
      oauth: { issuer: as.issuer, resource, scopes: ['tasks'], jwksCooldownMs: 0, onRefusal: (reason) => void refusedFor.push(reason) },
    },
  });
});
afterAll(async () => {
  await wire.close();
  await as.close();
  console.log(
    `OAuth resource server: ${counts.tokens} tokens tried, ${counts.accepted} accepted, refusals ${JSON.stringify(counts.refusals)}, ${counts.isolation} isolation checks`,
  );
});

const token = async (client: string, scope = 'tasks', aud = resource) => (counts.tokens++, as.token(client, aud, scope));

/** A token signed here: with the issuer's own key (the shapes its tokens have) or another. */
async function signed(claims: JWTPayload, key: { jwk?: Record<string, unknown>; kid?: string; typ?: string } = {}): Promise<string> {
  counts.tokens++;
  const jwk = key.jwk ?? as.signingKey();
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: as.issuer, aud: resource, sub: 'acme-app', tenant: 'acme', scope: 'tasks', iat: now, exp: now + 300, ...claims };
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', typ: key.typ ?? 'at+jwt', kid: key.kid ?? (jwk.kid as string) })
    .sign(await importJWK(jwk as never, 'RS256'));
}

/** A 2026-07-28 call with `bearer`, expected refused for `reason` with `status`; returns the challenge. */
async function refused(bearer: string, reason: RefusalReason, status = 401): Promise<string> {
  const before = refusedFor.length;
  const res = await rpc(resource, 'tools/list', {}, { token: bearer });
  expect(res.status).toBe(status);
  expect(refusedFor.slice(before)).toEqual([reason]);
  counts.refusals[reason] = (counts.refusals[reason] ?? 0) + 1;
  const head = await fetch(resource, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: '{}' });
  await head.text();
  return head.headers.get('www-authenticate') ?? '';
}

async function sdkClient(bearer: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }));
  return client;
}

describe('protected resource metadata', () => {
  it('is served at the path-inserted and the root form', async () => {
    for (const url of [metadataUrl, metadataUrl.replace(/\/mcp$/, '')]) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ resource, authorization_servers: [as.issuer], scopes_supported: ['tasks'], bearer_methods_supported: ['header'] });
    }
  });

  it('is named by the 401 of both generations, alike', async () => {
    const modern = await fetch(resource, { method: 'POST', headers: { 'mcp-protocol-version': '2026-07-28', 'content-type': 'application/json' }, body: '{}' });
    const legacy = await postRaw(resource, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }));
    for (const res of [modern, legacy]) {
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    }
    counts.refusals['no token'] = 2;
    const stranger = new Client({ name: 'test', version: '1.0.0' });
    await expect(stranger.connect(new StreamableHTTPClientTransport(new URL(resource)))).rejects.toThrow(/401|Unauthorized/i);
  });
});

describe('access tokens of the authorization server', () => {
  it('create and read a task on 2025-11-25 and 2026-07-28; the other tenant sees none of it', async () => {
    const acme = await token('acme-app');
    const globex = await token('globex-app');
    const client = await sdkClient(acme);
    const created = await client.request({ method: 'tools/call', params: { name: 'hold', arguments: {}, task: {} } }, CreateTaskResultSchema);
    const legacyId = created.task.taskId;
    expect((await client.experimental.tasks.getTask(legacyId)).status).toBe('working');
    const modern = await rpc(resource, 'tools/call', { name: 'hold', arguments: {} }, { token: acme });
    const modernId = modern.result!.taskId as string;
    // Each generation reads the other's task: one principal from one token.
    expect((await rpc(resource, 'tasks/get', { taskId: legacyId }, { token: acme })).result?.status).toBe('working');
    expect((await client.experimental.tasks.getTask(modernId)).status).toBe('working');
    counts.accepted += 2;
    const other = await sdkClient(globex);
    for (const taskId of [legacyId, modernId]) {
      await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(/Task not found/);
      expect((await rpc(resource, 'tasks/get', { taskId }, { token: globex })).error?.message).toMatch(/Task not found/);
      counts.isolation += 2;
    }
    for (const taskId of [legacyId, modernId]) await rpc(resource, 'tasks/cancel', { taskId }, { token: acme });
    await Promise.all([client.close(), other.close()]);
  });

  it('refuses a token for another audience', async () => {
    expect(await refused(await token('acme-app', 'tasks', 'https://other.example/mcp'), 'audience')).toBe(
      `Bearer error="invalid_token", resource_metadata="${metadataUrl}"`,
    );
  });

  it('refuses a token signed by a key the issuer does not publish, or not by the key it names', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const stranger = { ...(await exportJWK(privateKey)), kid: 'stranger' };
    await refused(await signed({}, { jwk: stranger }), 'unknown key');
    await refused(await signed({}, { jwk: stranger, kid: as.signingKey().kid! }), 'signature');
  });

  it('refuses a token whose claims were edited', async () => {
    const [head, payload, signature] = (await token('acme-app')).split('.');
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload!))) as JWTPayload;
    const edited = base64url.encode(JSON.stringify({ ...claims, tenant: 'globex' }));
    await refused(`${head}.${edited}.${signature}`, 'signature');
    await refused('not-a-jwt', 'malformed');
  });

  it('refuses an expired token, forgiving at most 5 s of clock skew, and one not yet valid', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect((await rpc(resource, 'tools/list', {}, { token: await signed({ exp: now - 2 }) })).status).toBe(200);
    counts.accepted++;
    await refused(await signed({ iat: now - 300, exp: now - 8 }), 'expired');
    await refused(await signed({ nbf: now + 60 }), 'not yet valid');
  });

  it('refuses another issuer, another token type, and a token without tenant or subject', async () => {
    await refused(await signed({ iss: 'http://127.0.0.1:1' }), 'issuer');
    await refused(await signed({}, { typ: 'dpop+jwt' }), 'type');
    await refused(await token('tenantless-app'), 'claims');
    await refused(await signed({ sub: undefined }), 'claims');
    await refused(await signed({ tenant: 'acme/evil' }), 'claims');
  });

  it('answers a token without the required scope with 403 insufficient_scope, on both generations', async () => {
    const narrow = await token('acme-app', 'other');
    expect(decodeJwt(narrow).scope).toBe('other');
    expect(await refused(narrow, 'scope', 403)).toBe(`Bearer error="insufficient_scope", scope="tasks", resource_metadata="${metadataUrl}"`);
    const legacy = await postRaw(resource, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }), { authorization: `Bearer ${narrow}` });
    expect(legacy.status).toBe(403);
  });

  it('accepts tokens of a rotated key once the new kid is seen, and still those of the old one', async () => {
    const old = await token('acme-app');
    await as.rotate();
    const rotated = await token('acme-app');
    expect(rotated.split('.')[0]).not.toBe(old.split('.')[0]);
    for (const bearer of [rotated, old]) expect((await rpc(resource, 'tools/list', {}, { token: bearer })).status).toBe(200);
    counts.accepted += 2;
  });
});

describe('an unreachable authorization server', () => {
  it('answers 503 with Retry-After, not 401: no verdict on the token', async () => {
    const http = await startHttpServer({
      runtime: wire.server.runtime,
      taskServer: wire.server,
      host: '127.0.0.1',
      port: 0,
      oauth: { issuer: 'http://127.0.0.1:1', resource: 'http://127.0.0.1:1/mcp' },
    });
    try {
      const res = await rpc(http.url, 'tools/list', {}, { token: 'whatever' });
      expect(res.status).toBe(503);
    } finally {
      await http.close();
    }
  });
});
