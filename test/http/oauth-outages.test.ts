import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/http-server.js';
import type { RefusalReason } from '../../src/http/oauth/access-token.js';
import { createOAuthResource, type OAuthResourceOptions } from '../../src/http/oauth/oauth-resource.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { RESOURCE_SERVER_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { startFaultProxy, type Fault, type FaultProxy } from '../support/fault-proxy.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// The authorization server (oidc-provider) is reached only through a proxy that counts requests
// per path and answers the key set or the introspection endpoint with faults when told.
const RESOURCE = 'https://mcp.example.com/mcp';
const JWKS = '/jwks';
const INTROSPECTION = '/token/introspection';

let proxy: FaultProxy;
let as: AuthorizationServer;
let wire: WireServer;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  proxy = await startFaultProxy();
  as = await startAuthorizationServer(
    [
      { id: 'acme-app', tenant: 'acme', scope: 'tasks' },
      { id: 'acme-opaque', tenant: 'acme', scope: 'tasks', opaque: true },
    ],
    { front: proxy },
  );
  wire = await startWireServer(new MemoryStore());
});
afterAll(async () => {
  for (const close of closers) await close();
  await wire.close();
  await as.close();
  await proxy.close();
});

function oauthOptions(extra: Partial<OAuthResourceOptions>, refusals: RefusalReason[]): OAuthResourceOptions {
  return {
    issuer: as.issuer,
    resource: RESOURCE,
    scopes: ['tasks'],
    introspection: { url: `${as.issuer}${INTROSPECTION}`, clientId: RESOURCE_SERVER_CLIENT.id, clientSecret: RESOURCE_SERVER_CLIENT.secret },
    onRefusal: (reason) => void refusals.push(reason),
    ...extra,
  };
}

/** A resource server of its own (its own key set and introspection cache) on a loopback port. */
async function resourceServer(extra: Partial<OAuthResourceOptions> = {}): Promise<{ url: string; refusals: RefusalReason[] }> {
  const refusals: RefusalReason[] = [];
  const http = await startHttpServer({
    runtime: wire.server.runtime,
    taskServer: wire.server,
    host: '127.0.0.1',
    port: 0,
    oauth: oauthOptions(extra, refusals),
  });
  closers.push(() => http.close());
  return { url: http.url, refusals };
}

/** A 2026-07-28 `tools/list` with `token`: its status and `Retry-After`. */
async function call(url: string, token: string): Promise<{ status: number; retryAfter: string | null }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
        },
      },
    }),
  });
  await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

const jwt = () => as.token('acme-app', RESOURCE, 'tasks');
const opaque = () => as.token('acme-opaque', RESOURCE, 'tasks');

/** A token of the issuer's shape signed by a key it does not publish, naming `kid`. */
let strangerKey: Promise<JWK> | undefined;
async function strangerToken(kid: string): Promise<string> {
  const jwk = await (strangerKey ??= generateKeyPair('RS256', { extractable: true }).then(({ privateKey }) => exportJWK(privateKey)));
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: as.issuer, aud: RESOURCE, sub: 'acme-app', tenant: 'acme', scope: 'tasks', iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid })
    .sign(await importJWK(jwk, 'RS256'));
}

/** Faults of an endpoint that answers: each is the endpoint's, never the token's. */
function answeredFaults(kid: () => string): Array<[string, () => Fault]> {
  return [
    ['HTTP 500', () => ({ status: 500, body: '{"error":"server_error"}' })],
    ['HTTP 502 with a page', () => ({ status: 502, body: '<html>bad gateway</html>' })],
    ['a body that is not JSON', () => ({ status: 200, body: '<html>maintenance</html>' })],
    ['JSON of the wrong shape', () => ({ status: 200, body: '[{"keys":"none","active":"yes"}]' })],
    ['a published key that cannot be used', () => ({ status: 200, body: JSON.stringify({ keys: [{ kty: 'RSA', kid: kid(), alg: 'RS256', n: 'AQAB' }] }) })],
    ['a reset connection', () => 'reset'],
  ];
}

describe('a key set that cannot be read', () => {
  for (const [name, fault] of answeredFaults(() => as.signingKey().kid!))
    it(`(${name}) answers 503 with Retry-After, no verdict on the token; the token is accepted once the keys answer`, async () => {
      const server = await resourceServer();
      const token = await jwt();
      proxy.fault(JWKS, fault());
      try {
        expect(await call(server.url, token)).toEqual({ status: 503, retryAfter: '5' });
      } finally {
        proxy.fault(JWKS, null);
      }
      expect(server.refusals).toEqual([]);
      expect((await call(server.url, token)).status).toBe(200);
    });

  it('answers a rotated key 503 while the keys cannot be read, keeps accepting the known key, and accepts the new one after', async () => {
    const server = await resourceServer();
    const old = await jwt();
    expect((await call(server.url, old)).status).toBe(200);
    await as.rotate();
    const rotated = await jwt();
    proxy.fault(JWKS, { status: 500, body: '' });
    try {
      expect(await call(server.url, rotated)).toEqual({ status: 503, retryAfter: '5' });
      expect((await call(server.url, old)).status).toBe(200);
    } finally {
      proxy.fault(JWKS, null);
    }
    expect((await call(server.url, rotated)).status).toBe(200);
    expect(server.refusals).toEqual([]);
  });
});

describe('key rotation', () => {
  it('accepts a key published after an unknown kid was refused, on its first use', async () => {
    const server = await resourceServer({ jwksCooldownMs: 3_600_000 });
    expect((await call(server.url, await jwt())).status).toBe(200);
    const fetched = proxy.count(JWKS);
    const stranger = await strangerToken('stranger');
    expect((await call(server.url, stranger)).status).toBe(401);
    expect(proxy.count(JWKS)).toBe(fetched + 1);
    // The same unknown kid again: refused from the negative cache, the issuer is not asked.
    expect((await call(server.url, stranger)).status).toBe(401);
    expect(proxy.count(JWKS)).toBe(fetched + 1);
    await as.rotate();
    expect((await call(server.url, await jwt())).status).toBe(200);
    expect(proxy.count(JWKS)).toBe(fetched + 2);
    expect(server.refusals).toEqual(['unknown key', 'unknown key']);
  });

  it('shares one fetch among concurrent unknown kids, and past the fetch budget answers 503 without asking', async () => {
    const refusals: RefusalReason[] = [];
    const resource = createOAuthResource(oauthOptions({ jwksCooldownMs: 0, jwksFetchBudget: { fetches: 3, windowMs: 3_600_000 } }, refusals));
    const known = await jwt();
    expect(await resource.verify(known)).toMatchObject({ principal: { tenant: 'acme', subject: 'acme-app' } });
    const fetched = proxy.count(JWKS);
    const strangers = await Promise.all(Array.from({ length: 20 }, (_, i) => strangerToken(`random-${i}`)));
    const outcomes = await Promise.all(strangers.map((t) => resource.verify(t)));
    expect(outcomes.every((o) => 'error' in o && o.error === 'invalid_token')).toBe(true);
    // One fetch already under way when the first kid was found missing, one for all the kids that waited: two.
    expect(proxy.count(JWKS) - fetched).toBe(2);
    expect(refusals).toEqual(Array.from({ length: 20 }, () => 'unknown key'));

    const server = await resourceServer({ jwksCooldownMs: 0, jwksFetchBudget: { fetches: 3, windowMs: 3_600_000 } });
    expect((await call(server.url, known)).status).toBe(200);
    expect((await call(server.url, await strangerToken('one'))).status).toBe(401);
    expect((await call(server.url, await strangerToken('two'))).status).toBe(401);
    const before = proxy.count(JWKS);
    const spent = await call(server.url, await strangerToken('three'));
    expect(spent.status).toBe(503);
    expect(Number(spent.retryAfter)).toBeGreaterThan(3500);
    expect(proxy.count(JWKS)).toBe(before);
    expect((await call(server.url, known)).status).toBe(200);
  });
});

describe('introspection', () => {
  it('asks once for 50 concurrent first uses of one token', async () => {
    const resource = createOAuthResource(oauthOptions({}, []));
    const token = await opaque();
    const before = as.introspections();
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => resource.verify(token)));
    expect(outcomes.every((o) => 'principal' in o && o.principal.tenant === 'acme')).toBe(true);
    expect(as.introspections() - before).toBe(1);

    const server = await resourceServer();
    const other = await opaque();
    const asked = as.introspections();
    const answers = await Promise.all(Array.from({ length: 50 }, () => call(server.url, other)));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 50 }, () => 200));
    expect(as.introspections() - asked).toBe(1);
  });

  it('answers 503 with Retry-After for every fault of the endpoint, then accepts the token once it answers', async () => {
    const server = await resourceServer();
    for (const [name, fault] of answeredFaults(() => 'none')) {
      const token = await opaque();
      proxy.fault(INTROSPECTION, fault());
      try {
        expect({ name, ...(await call(server.url, token)) }).toEqual({ name, status: 503, retryAfter: '5' });
      } finally {
        proxy.fault(INTROSPECTION, null);
      }
      expect({ name, ...(await call(server.url, token)) }).toEqual({ name, status: 200, retryAfter: null });
    }
    expect(server.refusals).toEqual([]);
  });

  it('holds the uses of one token that arrive while it is being asked about on that one request', async () => {
    const resource = createOAuthResource(oauthOptions({}, []));
    const token = await opaque();
    const before = proxy.count(INTROSPECTION);
    proxy.fault(INTROSPECTION, 'hang');
    const first = resource.verify(token);
    await proxy.received(INTROSPECTION, before + 1);
    const later = Array.from({ length: 10 }, () => resource.verify(token));
    proxy.fault(INTROSPECTION, null);
    for (const outcome of await Promise.all([first, ...later])) expect(outcome).toMatchObject({ principal: { tenant: 'acme', subject: 'acme-opaque' } });
    expect(proxy.count(INTROSPECTION) - before).toBe(1);
  });
});
