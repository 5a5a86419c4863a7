import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { TasklatchError } from '../core/errors.js';
import { principalProblem } from '../core/principal.js';
import type { Principal } from '../tools/principal.js';
import { bearerChallenge, type BearerError } from './oauth/bearer-challenge.js';

/** What an authentication scheme sees of a request: nothing of its body, which is read later. */
export interface AuthRequest {
  method: string;
  /** The request target against its `Host` (or `localhost` when that is unusable). */
  url: URL;
  headers: IncomingHttpHeaders;
}

/**
 * A caller's identity from a request, or null for "not admitted" (401). It runs before the body
 * is read and before either protocol generation sees the request, so it may await a database,
 * a cache or a header set by an mTLS-terminating proxy. A throw is a server fault (500). A
 * principal that fails the core's check (`principalProblem`) is refused with 401 `invalid_token`
 * naming its part, like a token whose claims fail it.
 */
export type HttpAuthenticate = (request: AuthRequest) => Promise<Principal | null>;

/** The outcome of the front's check: no authentication configured, a caller, or a refusal to send. */
export type AuthOutcome =
  | { kind: 'open' }
  | { kind: 'admitted'; principal: Principal; token: string; scopes: string[] }
  | { kind: 'refused'; status: 401 | 403; challenge: string; error: BearerError | 'unauthorized'; description: string }
  | { kind: 'unavailable'; cause: unknown; retryAfterSeconds: number };

/** A bearer-token check that can say more than yes or no: the OAuth resource server's. */
export interface BearerVerifier {
  verify(token: string): Promise<{ principal: Principal; scopes: string[] } | { error: BearerError; description: string; scope?: string }>;
  /** The URL of the protected resource metadata, named in every challenge. */
  readonly metadataUrl: string;
}

export interface AuthFrontOptions {
  tokens?: ReadonlyMap<string, Principal> | undefined;
  authenticate?: HttpAuthenticate | undefined;
  bearer?: BearerVerifier | undefined;
}

export type AuthFront = (req: IncomingMessage) => Promise<AuthOutcome>;

/** One check for both generations: the static tokens, a user's own scheme, or the OAuth verifier. */
export function authFront(options: AuthFrontOptions): AuthFront {
  const given = [options.tokens, options.authenticate, options.bearer].filter((o) => o !== undefined).length;
  if (given > 1) throw new TasklatchError('INVALID_INPUT', 'tokens, authenticate and oauth are alternatives: name one');
  const { bearer } = options;
  if (bearer !== undefined) {
    return async (req) => {
      const token = bearerOf(req);
      if (token === null) return refused(401, 'unauthorized', 'a bearer token is required', bearer.metadataUrl);
      let verified: Awaited<ReturnType<BearerVerifier['verify']>>;
      try {
        verified = await bearer.verify(token);
      } catch (cause) {
        // The issuer's metadata or keys could not be read: no verdict on the token, so no 401.
        return { kind: 'unavailable', cause, retryAfterSeconds: retryAfterSecondsOf(cause) };
      }
      if ('error' in verified) {
        const status = verified.error === 'insufficient_scope' ? 403 : 401;
        return refused(status, verified.error, verified.description, bearer.metadataUrl, verified.scope);
      }
      return admitted(verified.principal, token, verified.scopes, bearer.metadataUrl);
    };
  }
  const tokens = options.tokens;
  if (tokens !== undefined) checkTokens(tokens);
  const authenticate: HttpAuthenticate | undefined = options.authenticate ?? (tokens === undefined ? undefined : tokensAuthenticate(() => tokens));
  if (authenticate === undefined) return () => Promise.resolve({ kind: 'open' });
  return async (req) => {
    const principal = await authenticate(new HttpAuthRequest(req));
    if (principal !== null) return admitted(principal, bearerOf(req) ?? '', []);
    // A refused credential is named invalid_token; a request without one gets the bare challenge (RFC 6750 §3.1).
    const presented = req.headers.authorization !== undefined;
    return refused(401, presented ? 'invalid_token' : 'unauthorized', 'a known credential is required');
  };
}

/** When to ask again: the error's `data.retryAfterMs` (a spent key fetch budget says how long), else 5 s. */
function retryAfterSecondsOf(cause: unknown): number {
  const ms = (cause as { data?: { retryAfterMs?: unknown } } | null)?.data?.retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) ? Math.max(1, Math.ceil(ms / 1000)) : 5;
}

/** An `HttpAuthenticate` over a bearer token map, read anew per request so that it can be swapped. */
export function tokensAuthenticate(current: () => ReadonlyMap<string, Principal>): HttpAuthenticate {
  return (request) => {
    const value = request.headers.authorization;
    const token = typeof value === 'string' ? bearerIn(value) : null;
    return Promise.resolve((token === null ? undefined : current().get(token)) ?? null);
  };
}

/**
 * A caller the scheme named, if its principal passes the core's check: a tenant or subject with a
 * NUL, a control character, an unpaired surrogate or past its bound is refused here, before any
 * store sees it (one caller's malformed identity must not fail the batches it would join).
 */
function admitted(principal: Principal, token: string, scopes: string[], metadataUrl?: string): AuthOutcome {
  const problem = principalProblem(principal);
  if (problem === null) return { kind: 'admitted', principal, token, scopes };
  return refused(401, 'invalid_token', `the credential's ${problem.part} ${problem.problem}`, metadataUrl);
}

/** A token map given in code, checked as a tokens file is: a malformed principal is a configuration error. */
function checkTokens(tokens: ReadonlyMap<string, Principal>): void {
  let entry = 0;
  for (const principal of tokens.values()) {
    entry++;
    const problem = principalProblem(principal);
    if (problem !== null) throw new TasklatchError('INVALID_INPUT', `tokens: entry ${entry}: the ${problem.part} ${problem.problem}`);
  }
}

function refused(status: 401 | 403, error: BearerError | 'unauthorized', description: string, metadataUrl?: string, scope?: string): AuthOutcome {
  const challenge = bearerChallenge({
    ...(error === 'unauthorized' ? {} : { error }),
    ...(scope === undefined ? {} : { scope }),
    ...(metadataUrl === undefined ? {} : { resourceMetadata: metadataUrl }),
  });
  return { kind: 'refused', status, challenge, error, description };
}

/**
 * What a scheme sees of one request. The URL is built when a scheme reads it (a bearer token map
 * never does), by a getter of this class: an object literal with a getter made a hidden class of
 * its own per request, which kept the request's objects alive past young-generation collections
 * (a poll's whole request promoted to the old generation: ~11 µs of CPU per request).
 */
class HttpAuthRequest implements AuthRequest {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  private parsed: URL | undefined;

  constructor(private readonly req: IncomingMessage) {
    this.method = req.method ?? 'GET';
    this.headers = req.headers;
  }

  get url(): URL {
    return (this.parsed ??= urlOf(this.req));
  }
}

function bearerOf(req: IncomingMessage): string | null {
  const value = req.headers.authorization;
  return typeof value === 'string' ? bearerIn(value) : null;
}

function bearerIn(value: string): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(value)?.[1] ?? null;
}

function urlOf(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
  } catch {
    return new URL(req.url ?? '/', 'http://localhost');
  }
}
