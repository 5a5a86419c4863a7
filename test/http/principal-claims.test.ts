import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalOf, type AccessTokenRules, type RefusalReason } from '../../src/http/oauth/access-token.js';
import { startHttpServer } from '../../src/http/http-server.js';
import { loadTokenFile } from '../../src/http/token-file.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { freePort, RESOURCE_SERVER_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { rpc } from '../support/stateless.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// Every way a principal comes in over HTTP goes through the core's one check: a token's claims
// (a JWT's or an introspection answer's) and a tokens file or map.

let as: AuthorizationServer;
let wire: WireServer;
let resource: string;
const refusedFor: RefusalReason[] = [];

beforeAll(async () => {
  as = await startAuthorizationServer([
    { id: 'acme-app', tenant: 'acme', scope: 'tasks' },
    // Its tenant claim is two lone surrogates' worth of trouble: introspection answers it as JSON `"u\udc00"`.
    { id: 'surrogate-opaque', tenant: 'u\udc00', scope: 'tasks', opaque: true },
    { id: 'nul-opaque', tenant: 'ev\u0000il', scope: 'tasks', opaque: true },
  ]);
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  const introspection = { url: `${as.issuer}/token/introspection`, clientId: RESOURCE_SERVER_CLIENT.id, clientSecret: RESOURCE_SERVER_CLIENT.secret };
  wire = await startWireServer(new MemoryStore(), {
    http: { port, tokens: undefined, oauth: { issuer: as.issuer, resource, scopes: ['tasks'], introspection, onRefusal: (r) => void refusedFor.push(r) } },
  });
});
afterAll(async () => {
  await wire?.close();
  await as?.close();
});

/** A JWT access token signed with the issuer's own key, with `claims` over an ordinary token's. */
async function signed(claims: JWTPayload): Promise<string> {
  const jwk = as.signingKey();
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: as.issuer, aud: resource, sub: 'acme-app', tenant: 'acme', scope: 'tasks', iat: now, exp: now + 300, ...claims };
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid }).sign(await importJWK(jwk as never, 'RS256'));
}

describe('token claims that fail the check of every principal', () => {
  it.each<[string, JWTPayload, RegExp]>([
    ['a lone high surrogate in sub', { sub: 'u\ud800' }, /^the token's "sub" claim holds an unpaired surrogate \(U\+D800 at character 2\)$/],
    ['a lone low surrogate in sub', { sub: 'u\udc00' }, /^the token's "sub" claim holds an unpaired surrogate \(U\+DC00/],
    ['a NUL in sub', { sub: 'ali\u0000ce' }, /^the token's "sub" claim holds a control character \(U\+0000 at character 4\)$/],
    ['a C1 control in sub', { sub: 'a\u0085' }, /^the token's "sub" claim holds a control character \(U\+0085/],
    ['a sub past its bound', { sub: 's'.repeat(1025) }, /^the token's "sub" claim is longer than 1024 characters/],
    ['a lone surrogate in the tenant', { tenant: 'u\ud800' }, /^the token's "tenant" claim holds an unpaired surrogate/],
    ['a NUL in the tenant', { tenant: 'ev\u0000il' }, /^the token's "tenant" claim holds a control character/],
    ['a tenant past its bound', { tenant: 't'.repeat(257) }, /^the token's "tenant" claim is longer than 256 characters/],
  ])('refuses a JWT with %s: 401 invalid_token naming the claim, on both generations', async (_, claims, description) => {
    const token = await signed(claims);
    const before = refusedFor.length;
    const modern = await fetch(resource, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(modern.status).toBe(401);
    expect(modern.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    const body = (await modern.json()) as { error: string; error_description: string };
    expect(body.error).toBe('invalid_token');
    expect(body.error_description).toMatch(description);
    const legacy = await fetch(resource, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(legacy.status).toBe(401);
    expect(((await legacy.json()) as { error_description: string }).error_description).toMatch(description);
    expect(refusedFor.slice(before)).toEqual(['claims', 'claims']);
  });

  it('refuses an introspected tenant claim with a lone surrogate or a NUL, naming the claim', async () => {
    for (const [client, description] of [
      ['surrogate-opaque', /^the token's "tenant" claim holds an unpaired surrogate \(U\+DC00 at character 2\)$/],
      ['nul-opaque', /^the token's "tenant" claim holds a control character \(U\+0000 at character 3\)$/],
    ] as const) {
      const token = await as.token(client, resource, 'tasks');
      expect(token.split('.')).toHaveLength(1);
      const answer = await rpc(resource, 'tools/list', {}, { token });
      expect(answer.status).toBe(401);
      expect((answer as unknown as { error_description: string }).error_description).toMatch(description);
    }
  });

  it('names client_id when an introspection answer without sub gives the subject by it', () => {
    const rules: AccessTokenRules = { issuer: 'https://as', audience: 'https://rs', scopes: [], tenantClaim: 'org' };
    expect(principalOf({ org: 'acme', client_id: 'app\u0000' }, 'app\u0000', rules)).toMatchObject({
      error: 'invalid_token',
      reason: 'claims',
      description: expect.stringMatching(/^the token's "client_id" claim holds a control character/),
    });
    expect(principalOf({ org: 'acme\ud800', sub: 'alice' }, 'alice', rules)).toMatchObject({ description: expect.stringMatching(/^the token's "org" claim/) });
    expect(principalOf({ org: 'acme', sub: 'alice' }, 'alice', rules)).toEqual({ principal: { tenant: 'acme', subject: 'alice' }, scopes: [] });
  });

  it('admits a well-formed token beside them', async () => {
    const token = await as.token('acme-app', resource, 'tasks');
    const created = await rpc(resource, 'tools/call', { name: 'hold', arguments: {} }, { token });
    expect(created.result?.taskId).toEqual(expect.any(String));
    await rpc(resource, 'tasks/cancel', { taskId: created.result!.taskId }, { token });
  });
});

describe('a tokens file or map with a malformed principal', () => {
  it.each([
    ['a lone surrogate', { tenant: 'acme', subject: 'u\ud800' }, /entry 2: the subject holds an unpaired surrogate \(U\+D800 at character 2\)$/],
    ['a NUL', { tenant: 'ev\u0000il', subject: 'x' }, /entry 2: the tenant holds a control character \(U\+0000 at character 3\)$/],
    ['a slash in the tenant', { tenant: 'acme/eu', subject: 'x' }, /entry 2: the tenant holds a "\/"$/],
    ['an empty tenant', { tenant: '', subject: 'x' }, /entry 2: the tenant is empty$/],
    ['a long subject', { tenant: 'acme', subject: 's'.repeat(1025) }, /entry 2: the subject is longer than 1024 characters/],
    ['no subject', { tenant: 'acme' }, /entry 2, subject: /],
  ])('is refused at load, naming the entry and never the token: %s', async (_, bad, message) => {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-tokens-'));
    const file = join(dir, 'tokens.json');
    await writeFile(file, JSON.stringify({ 'secret-good': { tenant: 'acme', subject: 'alice' }, 'secret-bad': bad }));
    const error = await loadTokenFile(file).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(message);
    expect(error?.message).toContain(file);
    expect(error?.message).not.toContain('secret-bad');
  });

  it('is refused by startHttpServer when given as a map', async () => {
    const tokens = new Map([
      ['good', { tenant: 'acme', subject: 'alice' }],
      ['bad', { tenant: 'acme', subject: 'u\udc00' }],
    ]);
    await expect(startHttpServer({ runtime: wire.server.runtime, host: '127.0.0.1', port: 0, tokens })).rejects.toThrow(
      /tokens: entry 2: the subject holds an unpaired surrogate/,
    );
  });
});
