import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { principalProblem } from '../../core/principal.js';
import type { Principal } from '../../tools/principal.js';
import type { BearerError } from './bearer-challenge.js';

/** At most this much clock difference with the authorization server is forgiven on `exp` and `nbf`. */
export const CLOCK_SKEW_SECONDS = 5;

/** Asymmetric algorithms only: a shared-secret (HS*) token could be minted by anyone holding the secret. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** RFC 9068's `at+jwt`, and plain `JWT` that many servers still write; any other declared type is another kind of token. */
const ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'application/at+jwt', 'jwt']);

export interface AccessTokenRules {
  issuer: string;
  audience: string;
  scopes: readonly string[];
  tenantClaim: string;
}

export type AccessTokenOutcome =
  { principal: Principal; scopes: string[] } | { error: BearerError; description: string; scope?: string; reason: RefusalReason };

/** Why a token was refused, one word each: what the refusal log and the tests count. */
export type RefusalReason =
  'malformed' | 'inactive' | 'signature' | 'unknown key' | 'issuer' | 'audience' | 'expired' | 'not yet valid' | 'type' | 'claims' | 'scope';

/**
 * A JWT access token checked against this resource: signature by a key the issuer publishes,
 * `iss`, `aud`, `exp`/`nbf` (with {@link CLOCK_SKEW_SECONDS}), `typ` when present, then the
 * principal's claims and the required scopes. Errors of the key set's fetch are not refusals:
 * they are thrown, and the request is answered as a server fault.
 */
export async function verifyAccessToken(token: string, keys: JWTVerifyGetKey, rules: AccessTokenRules): Promise<AccessTokenOutcome> {
  let payload: JWTPayload;
  let typ: string | undefined;
  try {
    const verified = await jwtVerify(token, keys, {
      issuer: rules.issuer,
      audience: rules.audience,
      clockTolerance: CLOCK_SKEW_SECONDS,
      algorithms: ALGORITHMS,
      requiredClaims: ['exp'],
    });
    payload = verified.payload;
    typ = verified.protectedHeader.typ;
  } catch (error) {
    const refusal = refusalOf(error, rules);
    if (refusal === null) throw error;
    return refusal;
  }
  if (typ !== undefined && !ACCESS_TOKEN_TYPES.has(typ.toLowerCase()))
    return invalid('type', `the token's type ${JSON.stringify(typ)} is not an access token (at+jwt)`);
  return principalOf(payload, payload.sub, rules);
}

/**
 * The principal of a checked token's claims (a JWT's, or an introspection answer's), or why there
 * is none: the tenant claim and the subject must be there and pass the core's check of every
 * principal (`principalProblem`, the refusal naming the claim), and every required scope.
 */
export function principalOf(claims: JWTPayload, subject: unknown, rules: AccessTokenRules): AccessTokenOutcome {
  const tenant = claims[rules.tenantClaim];
  // No default identity: a token without its tenant or subject would otherwise share one context with every other such token.
  if (typeof tenant !== 'string' || tenant === '' || tenant.includes('/'))
    return invalid('claims', `the token has no usable "${rules.tenantClaim}" claim (a non-empty string without "/")`);
  if (typeof subject !== 'string' || subject === '') return invalid('claims', 'the token has no "sub" claim');
  const problem = principalProblem({ tenant, subject });
  if (problem !== null) {
    // An introspection answer without `sub` names its subject by `client_id`.
    const claim = problem.part === 'tenant' ? rules.tenantClaim : claims.sub === undefined ? 'client_id' : 'sub';
    return invalid('claims', `the token's "${claim}" claim ${problem.problem}`);
  }
  const scopes = scopesOf(claims);
  const missing = rules.scopes.filter((s) => !scopes.includes(s));
  if (missing.length > 0)
    return { error: 'insufficient_scope', reason: 'scope', scope: rules.scopes.join(' '), description: `the token lacks the scope ${missing.join(' ')}` };
  return { principal: { tenant, subject }, scopes };
}

/** `scope` (RFC 9068, space-separated) or `scp` (an array, as some servers write it). */
function scopesOf(payload: JWTPayload): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(' ').filter(Boolean);
  const scp = payload.scp;
  return Array.isArray(scp) ? scp.filter((s): s is string => typeof s === 'string') : [];
}

export function invalid(reason: RefusalReason, description: string): AccessTokenOutcome {
  return { error: 'invalid_token', reason, description };
}

function refusalOf(error: unknown, rules: AccessTokenRules): AccessTokenOutcome | null {
  if (error instanceof errors.JWTExpired) return invalid('expired', 'the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return invalid('issuer', `the token was not issued by ${rules.issuer}`);
    if (error.claim === 'aud') return invalid('audience', `the token is not for this resource (audience ${rules.audience})`);
    if (error.claim === 'nbf') return invalid('not yet valid', 'the token is not valid yet');
    return invalid('claims', `the token's "${error.claim}" claim is ${error.reason}`);
  }
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return invalid('unknown key', 'the token is not signed by a key the issuer publishes');
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalid('signature', 'the token signature does not verify');
  if (error instanceof errors.JOSEAlgNotAllowed) return invalid('signature', 'the token is signed with an algorithm not accepted');
  // The key set's own failures (unreachable, timed out, not a key set) are the server's, not the token's.
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return null;
  if (error instanceof errors.JOSEError) return invalid('malformed', 'the token is not a well-formed signed JWT');
  return null;
}
