import { createHash } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { TasklatchError } from '../../core/errors.js';
import { CLOCK_SKEW_SECONDS, invalid, principalOf, type AccessTokenOutcome, type AccessTokenRules } from './access-token.js';

/** RFC 7662 token introspection for opaque access tokens, as a confidential client of the authorization server. */
export interface IntrospectionOptions {
  url: string;
  clientId: string;
  clientSecret: string;
  /** How long an answer is reused (default 30 000 ms, never past the token's `exp`). */
  cacheMs?: number;
}

/** Enough distinct tokens for a busy endpoint; beyond it the oldest answers are dropped first. */
const CACHE_ENTRIES = 10_000;
/** A refused token is asked about again no sooner than this. */
const REFUSAL_CACHE_MS = 5000;

/**
 * Answers for opaque tokens from the introspection endpoint, cached by the token's SHA-256 (the
 * token itself is not kept). The answer must say `active`, name this resource in `aud` (RFC 8707:
 * a token for another resource is not ours to accept), and carry the same claims a JWT must. The
 * subject is `sub`, or `client_id` when the token has no user (client credentials). An endpoint
 * that does not answer, or answers anything but HTTP 200 with an RFC 7662 object, is thrown as a
 * server fault, never taken as a refusal. Concurrent first uses of one token share one request.
 */
export function createIntrospector(options: IntrospectionOptions, rules: AccessTokenRules): (token: string) => Promise<AccessTokenOutcome> {
  const cache = new Map<string, { outcome: AccessTokenOutcome; until: number }>();
  const cacheMs = options.cacheMs ?? 30_000;
  const credentials = Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64');

  const ask = async (token: string): Promise<{ outcome: AccessTokenOutcome; exp?: number }> => {
    const res = await fetch(options.url, {
      method: 'POST',
      headers: { authorization: `Basic ${credentials}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new TasklatchError('INTERNAL', `introspection endpoint answered HTTP ${res.status}`);
    }
    // Not JSON, or not an RFC 7662 answer (an object with a boolean `active`): the endpoint's fault, not the token's.
    const answer: unknown = await res.json().catch((cause: unknown) => {
      throw new TasklatchError('INTERNAL', 'introspection endpoint answered with a body that is not JSON', { cause });
    });
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer) || typeof (answer as { active?: unknown }).active !== 'boolean')
      throw new TasklatchError('INTERNAL', 'introspection endpoint answered with JSON that is not an introspection response (no boolean "active")');
    const claims = answer as JWTPayload & { active?: unknown; client_id?: unknown };
    if (claims.active !== true) return { outcome: invalid('inactive', 'the token is not active') };
    const now = Date.now() / 1000;
    if (claims.iss !== undefined && claims.iss !== rules.issuer) return { outcome: invalid('issuer', `the token was not issued by ${rules.issuer}`) };
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.includes(rules.audience)) return { outcome: invalid('audience', `the token is not for this resource (audience ${rules.audience})`) };
    if (typeof claims.exp === 'number' && claims.exp + CLOCK_SKEW_SECONDS < now) return { outcome: invalid('expired', 'the token has expired') };
    if (typeof claims.nbf === 'number' && claims.nbf - CLOCK_SKEW_SECONDS > now) return { outcome: invalid('not yet valid', 'the token is not valid yet') };
    const outcome = principalOf(claims, claims.sub ?? claims.client_id, rules);
    return typeof claims.exp === 'number' ? { outcome, exp: claims.exp } : { outcome };
  };

  /** Answers being asked for, by token digest: concurrent first uses of one token share one request. */
  const asking = new Map<string, Promise<AccessTokenOutcome>>();

  const askAndKeep = async (token: string, key: string): Promise<AccessTokenOutcome> => {
    const { outcome, exp } = await ask(token);
    const now = Date.now();
    const keep = 'error' in outcome ? REFUSAL_CACHE_MS : Math.min(cacheMs, exp === undefined ? cacheMs : exp * 1000 - now);
    cache.delete(key);
    if (keep > 0) cache.set(key, { outcome, until: now + keep });
    if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    return outcome;
  };

  return (token) => {
    const key = createHash('sha256').update(token).digest('base64url');
    const hit = cache.get(key);
    if (hit !== undefined && hit.until > Date.now()) return Promise.resolve(hit.outcome);
    const shared = asking.get(key);
    if (shared !== undefined) return shared;
    // A failure is shared by the requests that waited for it (each answered 503) and not kept: the next request asks again.
    const asked = askAndKeep(token, key).finally(() => asking.delete(key));
    asking.set(key, asked);
    return asked;
  };
}
