import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { rpc } from '../support/stateless.js';

let as: AuthorizationServer;
let serve: ServeProcess;
let resource: string;

beforeAll(async () => {
  as = await startAuthorizationServer(
    [
      { id: 'acme-app', tenant: 'acme', scope: 'tasks other' },
      { id: 'org-app', scope: 'tasks' },
    ],
    { oidcDiscoveryOnly: true },
  );
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  resource = `http://127.0.0.1:${port}/mcp`;
  // The later --http wins over the one spawnServe puts first: the resource URL needs the port.
  serve = await spawnServe(['--store', 'memory:', '--http', `127.0.0.1:${port}`, '--issuer', as.issuer, '--resource', resource, '--scopes', 'tasks']);
});
afterAll(async () => {
  expect(await serve.stop()).toBe(0);
  await as.close();
});

describe('tasklatch serve --issuer --resource', () => {
  it('serves the metadata, admits the issuer’s tokens for it and refuses a token without the scope', async () => {
    expect(serve.url).toBe(resource);
    // The keys are found through OpenID Connect discovery: this issuer has no RFC 8414 document.
    expect((await fetch(`${as.issuer}/.well-known/oauth-authorization-server`)).status).toBe(404);
    const metadata = await fetch(resource.replace('/mcp', '/.well-known/oauth-protected-resource/mcp'));
    expect(await metadata.json()).toMatchObject({ resource, authorization_servers: [as.issuer], scopes_supported: ['tasks'] });
    expect((await rpc(resource, 'tools/list', {}, { token: await as.token('acme-app', resource, 'tasks') })).status).toBe(200);
    expect((await rpc(resource, 'tools/list', {}, { token: await as.token('acme-app', resource, 'other') })).status).toBe(403);
    expect((await rpc(resource, 'tools/list', {}, { token: await as.token('org-app', resource, 'tasks') })).status).toBe(401);
  });

  it('reads the tenant from --tenant-claim', async () => {
    const other = await spawnServe(['--store', 'memory:', '--issuer', as.issuer, '--resource', resource, '--tenant-claim', 'client_id']);
    try {
      // org-app's token has no tenant claim, but its client_id names a tenant under this setting.
      expect((await rpc(other.url, 'tools/list', {}, { token: await as.token('org-app', resource, 'tasks') })).status).toBe(200);
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });
});

describe('serve OAuth argument errors', () => {
  it.each([
    [['--issuer', 'http://127.0.0.1:9'], /--issuer and --resource go together/],
    [['--scopes', 'tasks'], /--scopes needs --issuer and --resource/],
    [['--issuer', 'http://as.example.com', '--resource', 'https://mcp.example.com/mcp'], /issuer must be an https URL/],
    [['--issuer', 'https://as.example.com', '--resource', 'https://mcp.example.com/mcp#x'], /no query or fragment/],
    [['--issuer', 'https://as.example.com', '--resource', 'https://mcp.example.com/mcp', '--scopes', 'a,b c'], /not a scope token/],
    [['--issuer', 'https://as.example.com', '--resource', 'https://mcp.example.com/mcp', '--auth-tokens', 'x.json'], /exclude each other/],
    [
      ['--issuer', 'https://as.example.com', '--resource', 'https://mcp.example.com/mcp', '--introspection-url', 'https://as.example.com/i'],
      /TASKLATCH_INTROSPECTION_CLIENT_ID/,
    ],
  ])('%j', async (args, message) => {
    const run = await runCli(['serve', '--store', 'memory:', ...args], { env: { TASKLATCH_LOG_LEVEL: 'silent' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
