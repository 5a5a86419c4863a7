import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeProtectedHeader, type JWTVerifyGetKey } from 'jose';
import { TasklatchError } from '../../core/errors.js';
import type { BearerVerifier } from '../auth-front.js';
import { verifyAccessToken, type AccessTokenRules, type RefusalReason } from './access-token.js';
import { createIntrospector, type IntrospectionOptions } from './introspection.js';
import { discoverIssuer } from './issuer-discovery.js';
import { createKeySet } from './key-set.js';

/** This endpoint as an OAuth 2.1 resource server (MCP authorization; RFC 9728, RFC 8707, RFC 9068). */
export interface OAuthResourceOptions {
  /** The authorization server's issuer identifier; its keys are found through its metadata. */
  issuer: string;
  /** This MCP endpoint's public URL, e.g. `https://mcp.example.com/mcp`: the resource clients ask tokens for. */
  resource: string;
  /** The `aud` a token must carry (default: `resource`). */
  audience?: string;
  /** Scopes every call needs; a token without one of them gets 403 `insufficient_scope`. */
  scopes?: readonly string[];
  /** The claim that names the caller's tenant (default `tenant`). */
  tenantClaim?: string;
  /** How long a `kid` found missing from the issuer's keys is refused without fetching them again (default 10 000); another kid still fetches. */
  jwksCooldownMs?: number;
  /** At most this many fetches of the issuer's keys in any `windowMs` (default 10 in 10 000): a flood of unknown kids cannot hammer the issuer. */
  jwksFetchBudget?: { fetches: number; windowMs: number };
  /** Opaque (non-JWT) tokens are asked about at this RFC 7662 endpoint; without it they are refused as malformed. */
  introspection?: IntrospectionOptions;
  /** Told of every refused token, with its reason. */
  onRefusal?: (reason: RefusalReason, description: string) => void;
}

/** A verifier for the HTTP front, and the metadata document it serves. */
export interface OAuthResource extends BearerVerifier {
  readonly metadata: ProtectedResourceMetadata;
  /** Answers GET on the metadata paths; false for any other request. */
  serveMetadata(req: IncomingMessage, res: ServerResponse, path: string): boolean;
}

/** RFC 9728 §2, the fields a client reads to find where to get a token. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported?: string[];
  bearer_methods_supported: ['header'];
}

/** A failed discovery is retried no sooner than this: an unreachable issuer is not asked on every request. */
const DISCOVERY_RETRY_MS = 5000;
/** Keys are fetched again after this long even when every token names a known one (jose's default age). */
const JWKS_MAX_AGE_MS = 600_000;
/** A key set fetch not answered in full by then has failed: the request gets 503 rather than waiting on. */
const JWKS_TIMEOUT_MS = 5000;

export function createOAuthResource(options: OAuthResourceOptions): OAuthResource {
  checkUrl('issuer', options.issuer);
  const resource = checkUrl('resource', options.resource);
  const audience = options.audience ?? options.resource;
  checkUrl('audience', audience);
  const scopes = [...(options.scopes ?? [])];
  for (const scope of scopes)
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))
      throw new TasklatchError('INVALID_INPUT', `scope ${JSON.stringify(scope)} is not a scope token (RFC 6749 §3.3)`);
  const tenantClaim = options.tenantClaim ?? 'tenant';
  if (tenantClaim === '') throw new TasklatchError('INVALID_INPUT', 'the tenant claim name is empty');
  const rules: AccessTokenRules = { issuer: options.issuer, audience, scopes, tenantClaim };
  const missingKidMs = options.jwksCooldownMs ?? 10_000;
  const budget = options.jwksFetchBudget ?? { fetches: 10, windowMs: 10_000 };
  if (!(missingKidMs >= 0)) throw new TasklatchError('INVALID_INPUT', `jwksCooldownMs must be a number of ms >= 0, got ${missingKidMs}`);
  if (!Number.isInteger(budget.fetches) || budget.fetches < 1 || !(budget.windowMs >= 0))
    throw new TasklatchError('INVALID_INPUT', `jwksFetchBudget needs fetches >= 1 and windowMs >= 0, got ${JSON.stringify(budget)}`);

  if (options.introspection !== undefined) checkUrl('introspection URL', options.introspection.url);
  const introspect = options.introspection === undefined ? null : createIntrospector(options.introspection, rules);

  const paths = metadataPaths(resource);
  const metadataUrl = `${resource.origin}${paths[0]!}`;
  const metadata: ProtectedResourceMetadata = {
    resource: options.resource,
    authorization_servers: [options.issuer],
    ...(scopes.length === 0 ? {} : { scopes_supported: scopes }),
    bearer_methods_supported: ['header'],
  };

  let keys: Promise<JWTVerifyGetKey> | null = null;
  let failedAt = 0;
  const keySet = (): Promise<JWTVerifyGetKey> => {
    if (keys === null || (failedAt > 0 && Date.now() - failedAt >= DISCOVERY_RETRY_MS)) {
      failedAt = 0;
      keys = discoverIssuer(options.issuer).then(
        (found) => createKeySet(new URL(found.jwks_uri), { missingKidMs, budget, maxAgeMs: JWKS_MAX_AGE_MS, timeoutMs: JWKS_TIMEOUT_MS }),
        (error: unknown) => {
          failedAt = Date.now();
          throw error;
        },
      );
    }
    return keys;
  };

  return {
    metadataUrl,
    metadata,
    async verify(token) {
      const outcome = introspect !== null && !isJwt(token) ? await introspect(token) : await verifyAccessToken(token, await keySet(), rules);
      if ('error' in outcome) options.onRefusal?.(outcome.reason, outcome.description);
      return outcome;
    },
    serveMetadata(req, res, path) {
      if (!paths.includes(path) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
      // Public, and read by browser-based clients of other origins.
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300', 'access-control-allow-origin': '*' });
      res.end(req.method === 'HEAD' ? undefined : JSON.stringify(metadata));
      return true;
    },
  };
}

/** A compact JWS: what is verified locally; anything else goes to introspection when there is one. */
function isJwt(token: string): boolean {
  if (token.split('.').length !== 3) return false;
  try {
    decodeProtectedHeader(token);
    return true;
  } catch {
    return false;
  }
}

/** RFC 9728 §3.1: the well-known prefix inserted before the resource's path, then the root form. */
export function metadataPaths(resource: URL): string[] {
  const root = '/.well-known/oauth-protected-resource';
  const path = resource.pathname === '/' ? '' : resource.pathname.replace(/\/$/, '');
  return path === '' ? [root] : [`${root}${path}`, root];
}

/** An https URL (http only on a loopback host, for development) without fragment or query. */
function checkUrl(name: string, text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TasklatchError('INVALID_INPUT', `${name} must be an absolute URL, got ${JSON.stringify(text)}`);
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw new TasklatchError('INVALID_INPUT', `${name} must be an https URL (http only on a loopback host), got ${JSON.stringify(text)}`);
  if (url.hash !== '' || url.search !== '' || text.includes('#'))
    throw new TasklatchError('INVALID_INPUT', `${name} must have no query or fragment, got ${JSON.stringify(text)}`);
  return url;
}
