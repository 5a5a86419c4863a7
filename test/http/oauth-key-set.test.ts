import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors, exportJWK, generateKeyPair, type JWK, type JWTVerifyGetKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { createKeySet, type KeySetOptions } from '../../src/http/oauth/key-set.js';
import { freePort } from '../support/authorization-server.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';

// The key set alone, against a JWKS server of the test's own behind the fault proxy, with the
// clock in the test's hands: cooldowns, budget windows and key ages pass without waiting.
let published: JWK[] = [];
let gate: Promise<void> = Promise.resolve();
let arrived: () => void = () => {};
let jwksServer: Server;
let proxy: FaultProxy;
let url: URL;
let publicKeys: JWK[];

beforeAll(async () => {
  publicKeys = await Promise.all(
    ['a', 'b', 'c'].map(async (kid) => ({ ...(await exportJWK((await generateKeyPair('ES256')).publicKey)), kid, alg: 'ES256', use: 'sig' })),
  );
  jwksServer = createServer((_req, res) => {
    // The keys as they are when the request arrives, sent when the gate (if any) opens.
    const body = JSON.stringify({ keys: published });
    arrived();
    void gate.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  proxy = await startFaultProxy();
  proxy.forwardTo(`http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`);
  url = new URL(`${proxy.url}/jwks`);
});
afterAll(async () => {
  await proxy.close();
  jwksServer.closeAllConnections();
  await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
});

const key = (kid: string) => publicKeys.find((k) => k.kid === kid)!;

/** A key set on a clock the test moves, with `published` as the issuer's keys. */
function keySet(options: Partial<KeySetOptions> = {}, keys: string[] = ['a']) {
  published = keys.map(key);
  const clock = { now: 1_000_000 };
  const get = createKeySet(url, {
    missingKidMs: 10_000,
    budget: { fetches: 5, windowMs: 10_000 },
    maxAgeMs: 600_000,
    timeoutMs: 5000,
    now: () => clock.now,
    ...options,
  });
  const fetchedBefore = proxy.count('/jwks');
  return { get, clock, fetches: () => proxy.count('/jwks') - fetchedBefore };
}

/** What the key set answers for `kid`: found, missing (a verdict on the token), or unavailable (no verdict) with its Retry-After. */
async function resolve(get: JWTVerifyGetKey, kid: string): Promise<string> {
  try {
    await get({ alg: 'ES256', kid }, { payload: '', signature: '' });
    return 'found';
  } catch (error) {
    if (error instanceof errors.JWKSNoMatchingKey) return 'missing';
    if (isTasklatchError(error)) return `unavailable ${(error.data as { retryAfterMs: number }).retryAfterMs}`;
    throw error;
  }
}

describe('the issuer key set', () => {
  it('fetches again for a new kid while another kid is cooling down, and not for the cooling one', async () => {
    const { get, clock, fetches } = keySet();
    expect(await resolve(get, 'a')).toBe('found');
    expect(await resolve(get, 'b')).toBe('missing');
    expect(fetches()).toBe(2);
    expect(await resolve(get, 'b')).toBe('missing');
    expect(fetches()).toBe(2);
    published = [key('a'), key('c')];
    expect(await resolve(get, 'c')).toBe('found');
    expect(fetches()).toBe(3);
    // b is published now, but was found missing 0 ms ago: refused until its cooldown ends.
    published = [key('a'), key('b'), key('c')];
    expect(await resolve(get, 'b')).toBe('missing');
    clock.now += 10_000;
    expect(await resolve(get, 'b')).toBe('found');
    expect(fetches()).toBe(4);
  });

  it('waits for a fetch that started after the kid was found missing, not one already under way', async () => {
    const { get, fetches } = keySet();
    expect(await resolve(get, 'a')).toBe('found');
    let open = () => {};
    gate = new Promise((resolve) => (open = resolve));
    const answering = new Promise<void>((resolve) => (arrived = resolve));
    const early = resolve(get, 'x');
    await answering;
    // Published after that fetch was answered (with a alone) but before it arrived: b's first use still finds b.
    published = [key('a'), key('b')];
    const rotated = resolve(get, 'b');
    gate = Promise.resolve();
    open();
    expect(await Promise.all([early, rotated])).toEqual(['missing', 'found']);
    expect(fetches()).toBe(3);
  });

  it('fetches at most the budget in a window, answering unavailable with the time until it frees', async () => {
    const { get, clock, fetches } = keySet({ missingKidMs: 0, budget: { fetches: 3, windowMs: 10_000 } });
    expect(await resolve(get, 'a')).toBe('found');
    clock.now += 1000;
    expect(await resolve(get, 'x')).toBe('missing');
    expect(await resolve(get, 'y')).toBe('missing');
    expect(await resolve(get, 'z')).toBe('unavailable 9000');
    expect(await resolve(get, 'a')).toBe('found');
    expect(fetches()).toBe(3);
    clock.now += 9000;
    published = [key('a'), key('b')];
    expect(await resolve(get, 'b')).toBe('found');
    expect(fetches()).toBe(4);
  });

  it('fetches keys past their age again: a withdrawn key stops verifying; while that fetch fails the known keys stay', async () => {
    const { get, clock, fetches } = keySet({}, ['a', 'b']);
    expect(await resolve(get, 'b')).toBe('found');
    clock.now += 600_000;
    proxy.fault('/jwks', { status: 503, body: '' });
    expect(await resolve(get, 'b')).toBe('found');
    expect(fetches()).toBe(2);
    proxy.fault('/jwks', null);
    published = [key('a')];
    expect(await resolve(get, 'b')).toBe('missing');
    expect(await resolve(get, 'a')).toBe('found');
    expect(fetches()).toBe(3);
  });

  it('answers unavailable, never missing, when the keys cannot be fetched at all', async () => {
    const { get } = keySet();
    for (const fault of [{ status: 500, body: 'oops' }, { status: 200, body: 'oops' }, { status: 200, body: '{"keys":{}}' }, 'reset'] as const) {
      proxy.fault('/jwks', fault);
      expect(await resolve(get, 'a')).toBe('unavailable 5000');
    }
    proxy.fault('/jwks', null);
    expect(await resolve(get, 'a')).toBe('found');
  });

  it('answers unavailable when the keys do not answer in time, or nothing listens', async () => {
    proxy.fault('/jwks', 'hang');
    try {
      const slow = keySet({ timeoutMs: 50 });
      expect(await resolve(slow.get, 'a')).toBe('unavailable 5000');
    } finally {
      proxy.fault('/jwks', null);
    }
    const refused = createKeySet(new URL(`http://127.0.0.1:${await freePort()}/jwks`), {
      missingKidMs: 0,
      budget: { fetches: 1, windowMs: 10_000 },
      maxAgeMs: 600_000,
      timeoutMs: 5000,
    });
    expect(await resolve(refused, 'a')).toBe('unavailable 5000');
  });
});
