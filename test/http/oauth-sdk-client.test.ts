import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { InvalidScopeError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RefusalReason } from '../../src/http/oauth/access-token.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { freePort, startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { until } from '../support/until.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// The SDK's client-credentials provider presents its secret by HTTP Basic only.
const CLIENTS = [
  { id: 'acme-app', tenant: 'acme', scope: 'tasks other', auth: 'client_secret_basic' as const },
  { id: 'globex-app', tenant: 'globex', scope: 'tasks other', auth: 'client_secret_basic' as const },
  // The authorization server never grants it `tasks`, whatever it asks for.
  { id: 'narrow-app', tenant: 'acme', scope: 'other', auth: 'client_secret_basic' as const },
];
const TASKS = { tasks: { requests: { tools: { call: {} } } } };

let as: AuthorizationServer;
let wire: WireServer;
let resource: string;
const tokenRequests: URLSearchParams[] = [];
/** Every request the SDK made, in order, with the challenge of a refusal. */
const seen: Array<{ url: string; status: number; challenge: string | null }> = [];
const refusedFor: RefusalReason[] = [];

beforeAll(async () => {
  as = await startAuthorizationServer(CLIENTS);
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  wire = await startWireServer(new MemoryStore(), {
    http: { port, tokens: undefined, oauth: { issuer: as.issuer, resource, scopes: ['tasks'], onRefusal: (reason) => void refusedFor.push(reason) } },
  });
});
afterAll(async () => {
  await wire.close();
  await as.close();
  console.log(`SDK client credentials: ${tokenRequests.length} token requests, refusals ${JSON.stringify(refusedFor)}`);
});

/** An SDK client whose only credentials are its id and secret: everything else it discovers from the 401. */
async function discovering(clientId: string, scope?: string): Promise<Client> {
  const authProvider = new ClientCredentialsProvider({
    clientId,
    clientSecret: `${clientId}-secret`,
    expectedIssuer: as.issuer,
    ...(scope === undefined ? {} : { scope }),
  });
  // Watches what the SDK sends and receives, and changes nothing of it.
  const watching: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (url === `${as.issuer}/token`) tokenRequests.push(new URLSearchParams(init?.body as URLSearchParams | string));
    const res = await fetch(input, init);
    seen.push({ url, status: res.status, challenge: res.headers.get('www-authenticate') });
    return res;
  };
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: TASKS });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider, fetch: watching }));
  return client;
}

describe('the SDK client with its own client-credentials provider', () => {
  it('discovers the authorization server, asks for a token for this resource, and runs a task', async () => {
    const before = tokenRequests.length;
    const acme = await discovering('acme-app', 'tasks');
    // The path: refused, then the metadata the challenge names, the issuer's metadata, a token for this resource, the retry.
    const metadataUrl = resource.replace('/mcp', '/.well-known/oauth-protected-resource/mcp');
    expect(seen.map(({ url, status }) => `${status} ${url}`).slice(0, 5)).toEqual([
      `401 ${resource}`,
      `200 ${metadataUrl}`,
      `200 ${as.issuer}/.well-known/oauth-authorization-server`,
      `200 ${as.issuer}/token`,
      `200 ${resource}`,
    ]);
    expect(seen[0]!.challenge).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    expect(tokenRequests.slice(before).map((p) => Object.fromEntries(p))).toEqual([{ grant_type: 'client_credentials', scope: 'tasks', resource }]);
    const { tools } = await acme.listTools();
    expect(tools.find((t) => t.name === 'export_ledger')?.execution?.taskSupport).toBe('required');

    const created = await acme.request(
      { method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-01', rows: 3 }, task: {} } },
      CreateTaskResultSchema,
    );
    const { taskId } = created.task;
    await until(async () => ((await acme.experimental.tasks.getTask(taskId)).status === 'completed' ? true : undefined));
    const result = await acme.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.isError).not.toBe(true);
    expect(result.structuredContent).toMatchObject({ rows: 3 });

    // Another tenant, through the same discovery, sees nothing of it.
    const globex = await discovering('globex-app', 'tasks');
    await expect(globex.experimental.tasks.getTask(taskId)).rejects.toThrow(/Task not found/);
    expect((await globex.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(taskId);
    await Promise.all([acme.close(), globex.close()]);
  });

  it('is refused when the authorization server will not grant it the scope', async () => {
    const before = refusedFor.length;
    const asked = tokenRequests.length;
    await expect(discovering('narrow-app', 'tasks')).rejects.toThrow(InvalidScopeError);
    // Declined at the token endpoint: tasklatch never sees a token.
    expect(refusedFor.slice(before)).toEqual([]);
    expect(tokenRequests.slice(asked).map((p) => Object.fromEntries(p))).toEqual([{ grant_type: 'client_credentials', scope: 'tasks', resource }]);
  });

  it('is refused with a token of another scope, or of none', async () => {
    const before = refusedFor.length;
    const asked = tokenRequests.length;
    await expect(discovering('narrow-app', 'other')).rejects.toThrow(/403/);
    const after = refusedFor.length;
    await expect(discovering('narrow-app')).rejects.toThrow(/403/);
    // On 403 insufficient_scope the SDK asks once more, but for its configured scope, not the
    // challenge's `scope="tasks"` (client/auth.js fetchToken): the same token again, refused again.
    expect(refusedFor.slice(before, after)).toEqual(['scope', 'scope']);
    expect(refusedFor.slice(after)).toEqual(['scope', 'scope']);
    expect(tokenRequests.slice(asked).map((p) => p.get('scope'))).toEqual(['other', 'other', null, null]);
    expect(tokenRequests.slice(asked).every((p) => p.get('resource') === resource)).toBe(true);
  });
});
