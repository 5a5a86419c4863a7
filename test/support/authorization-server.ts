import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A client of the authorization server: its tenant claim (none: the token carries no tenant) and the scopes it may ask for. */
export interface AsClient {
  id: string;
  tenant?: string;
  scope: string;
  /** Its access tokens are opaque (only introspection reads them) instead of JWTs. */
  opaque?: boolean;
  /** How it presents its secret at the token endpoint (the server accepts only this one): form fields unless told. */
  auth?: 'client_secret_post' | 'client_secret_basic';
}

/** The confidential client the resource server introspects tokens as. */
export const RESOURCE_SERVER_CLIENT = { id: 'resource-server', secret: 'resource-server-secret' };

export interface AuthorizationServer {
  issuer: string;
  /** Requests served at the introspection endpoint so far. */
  introspections(): number;
  /** A client-credentials access token of `clientId` for `resource` with `scope`. */
  token(clientId: string, resource: string, scope: string): Promise<string>;
  /** The private signing key now in use (first in the JWKS). */
  signingKey(): JWK;
  /** Publishes a new signing key first in the JWKS (the old one stays published): new tokens carry its kid. */
  rotate(): Promise<void>;
  close(): Promise<void>;
}

/** The scopes the resource server offers. */
const RESOURCE_SCOPES = 'tasks other';

/** A loopback port free now: for a resource URL that must be known before its server starts. */
export async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

async function signingJwk(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

/**
 * oidc-provider on a loopback port (or behind `front`), issuing RS256 JWT access tokens (RFC 9068) by client
 * credentials for any resource indicator (RFC 8707), with a `tenant` claim per client.
 */
export async function startAuthorizationServer(
  clients: AsClient[],
  options: { oidcDiscoveryOnly?: boolean; front?: { url: string; forwardTo(origin: string): void } } = {},
): Promise<AuthorizationServer> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => void res.writeHead(503).end();
  let introspections = 0;
  const http = createServer((req, res) => {
    if (req.url === '/token/introspection') introspections++;
    // Many servers publish only OpenID Connect discovery: the RFC 8414 document is then missing.
    if (options.oidcDiscoveryOnly === true && req.url?.startsWith('/.well-known/oauth-authorization-server') === true) return void res.writeHead(404).end();
    handler(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  // Behind a front (a proxy that may answer with faults), the front's URL is the issuer: metadata, keys and tokens are all reached through it.
  options.front?.forwardTo(origin);
  const issuer = options.front?.url ?? origin;
  const tenants = new Map(clients.map((c) => [c.id, c.tenant]));
  const opaque = new Set(clients.filter((c) => c.opaque === true).map((c) => c.id));
  const basic = new Set(clients.filter((c) => c.auth === 'client_secret_basic').map((c) => c.id));
  let keys = [await signingJwk('key-1')];

  const provide = () => {
    const provider = new Provider(issuer, {
      clients: [
        ...clients.map((c) => ({
          client_id: c.id,
          client_secret: `${c.id}-secret`,
          grant_types: ['client_credentials'],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: c.auth ?? 'client_secret_post',
          scope: c.scope,
        })),
        {
          client_id: RESOURCE_SERVER_CLIENT.id,
          client_secret: RESOURCE_SERVER_CLIENT.secret,
          grant_types: [],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      jwks: { keys },
      scopes: ['openid', ...RESOURCE_SCOPES.split(' ')],
      ttl: { ClientCredentials: 300 },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        resourceIndicators: {
          enabled: true,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resourceIndicator: string, client: { clientId: string }) => ({
            scope: RESOURCE_SCOPES,
            audience: resourceIndicator,
            accessTokenFormat: opaque.has(client.clientId) ? 'opaque' : 'jwt',
            accessTokenTTL: 300,
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
      extraTokenClaims: (_ctx: unknown, token: { clientId: string }) => {
        const tenant = tenants.get(token.clientId);
        return tenant === undefined ? {} : { tenant };
      },
    });
    handler = provider.callback();
  };
  provide();

  return {
    issuer,
    async token(clientId, resource, scope) {
      const form = new URLSearchParams({ grant_type: 'client_credentials', resource, scope });
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (basic.has(clientId)) headers.authorization = `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`;
      else {
        form.set('client_id', clientId);
        form.set('client_secret', `${clientId}-secret`);
      }
      const res = await fetch(`${issuer}/token`, { method: 'POST', headers, body: form });
      const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
      if (body.access_token === undefined) throw new Error(`token endpoint: ${res.status} ${body.error} ${body.error_description}`);
      return body.access_token;
    },
    introspections: () => introspections,
    signingKey: () => keys[0]!,
    async rotate() {
      keys = [await signingJwk(`key-${keys.length + 1}`), ...keys];
      provide();
    },
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
