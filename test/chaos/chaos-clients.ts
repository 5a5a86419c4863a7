import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * MCP clients for a set of servers that may die at any moment. An operation goes to a random
 * server; a transport failure or an internal error (a server whose database is restarting)
 * drops that client and retries elsewhere. A JSON-RPC answer with a real code is returned as is.
 */
export class ChaosClients {
  private readonly clients = new Map<string, Client>();
  retries = 0;

  constructor(private readonly urls: readonly string[]) {}

  async run<T>(token: string, op: (client: Client) => Promise<T>, deadline: number): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const url = this.urls[Math.floor(Math.random() * this.urls.length)]!;
      const key = `${url} ${token}`;
      try {
        let client = this.clients.get(key);
        if (client === undefined) {
          client = new Client({ name: 'chaos', version: '1.0.0' });
          await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }), {
            timeout: 10_000,
          });
          this.clients.set(key, client);
        }
        return await op(client);
      } catch (error) {
        // -32602 and -32601 are the server's real answers; anything else (a dropped
        // connection, a timeout, an internal error while the database restarts) is retried.
        const code = (error as { code?: unknown }).code;
        if (code === -32602 || code === -32601) throw error;
        const stale = this.clients.get(key);
        this.clients.delete(key);
        await stale?.close().catch(() => undefined);
        this.retries++;
        if (Date.now() > deadline) throw new Error(`gave up after ${attempt + 1} attempts: ${String(error)}`);
        await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** Math.min(attempt, 5), 1000)));
      }
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((c) => c.close()));
    this.clients.clear();
  }
}
