import { WireConnection } from '../scenarios/http/wire-client.js';
import { TOOL, toolArgs } from './mcp.js';

/**
 * A task call on the 2026-07-28 wire over HTTP, as a client that declares the tasks extension
 * sends it: one POST with its routing headers, answered with the created task. Each requestor
 * keeps one connection of its own (`WireConnection`, the polling scenarios' client), so that the
 * measured cost is the server's, not a client library's.
 */

const MODERN = '2026-07-28';

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

export interface WireAdmitter {
  /** One task call of requestor `w`; rejects unless the answer is a created task. */
  call(w: number, n: number): Promise<void>;
  close(): void;
}

/** Requestor i sends with `tokens[i]` to the endpoint at `url`. */
export function wireAdmitter(url: string, tokens: readonly string[]): WireAdmitter {
  const { hostname, port, pathname } = new URL(url);
  const connections = tokens.map(() => new WireConnection(hostname, Number(port), pathname));
  const headers = tokens.map((token) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    'mcp-name': TOOL,
  }));
  return {
    call: async (w, n) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: TOOL, arguments: toolArgs(n), _meta: MODERN_META } });
      const reply = await (connections[w] as WireConnection).request(headers[w] as Record<string, string>, body);
      if (reply.status !== 200 || !reply.body.includes('"resultType":"task"') || !reply.body.includes('"status":"working"')) {
        throw new Error(`expected a created task, got ${reply.status}: ${reply.body.slice(0, 200)}`);
      }
    },
    close: () => {
      for (const c of connections) c.close();
    },
  };
}
