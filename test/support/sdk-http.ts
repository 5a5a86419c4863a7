import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Principal } from '../../src/tools/principal.js';

export const SDK_TOKENS = new Map<string, Principal>([
  ['alice', { tenant: 'acme', subject: 'alice' }],
  ['bob', { tenant: 'globex', subject: 'bob' }],
]);

/**
 * A user's own SDK server over Streamable HTTP, as the SDK's examples build one: an `McpServer`
 * per session from `build`, bearer tokens turned into `req.auth`, and `wrap` applied to each new
 * transport before it is connected.
 */
export async function serveSdk(build: () => McpServer | Promise<McpServer>, wrap: <T extends StreamableHTTPServerTransport>(t: T) => T = (t) => t) {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const servers: McpServer[] = [];
  const http = createServer((req, res) => {
    void (async () => {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const principal = token === undefined ? undefined : SDK_TOKENS.get(token);
      if (principal !== undefined)
        (req as IncomingMessage & { auth?: unknown }).auth = { token, clientId: `${principal.tenant}/${principal.subject}`, scopes: [], extra: { principal } };
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString()) as unknown);
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? sessions.get(id) : undefined;
      if (transport === undefined) {
        transport = wrap(
          new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => void sessions.set(sid, transport!) }),
        );
        const server = await build();
        servers.push(server);
        await server.connect(transport);
      }
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    async close() {
      await Promise.allSettled(servers.map((s) => s.close()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeAllConnections();
    },
  };
}

/** An SDK client of `token`'s caller that can take tasks (unless `capabilities` says otherwise). */
export async function sdkClient(
  url: string,
  token: string,
  capabilities: Record<string, unknown> = { tasks: { requests: { tools: { call: {} } } } },
): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}
