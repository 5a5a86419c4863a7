// A server of your own on @modelcontextprotocol/server 2.x, with tasklatch attached: its tool
// slow_echo becomes a durable task on protocol revision 2026-07-28 (tasks extension).
//   node examples/sdk-v2/server.mjs --port 3000 --store sqlite:./.tasklatch/sdk-v2.db [--lease-ms 30000]
// Serves http://127.0.0.1:PORT/mcp. A task survives a restart on the same store, and a task
// whose process died is taken over by the next process once its lease (--lease-ms) ran out.
import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { openStore } from 'tasklatch';
import { SdkV2Tasklatch } from 'tasklatch/sdk-v2';
import { z } from 'zod';

const { values } = parseArgs({ options: { port: { type: 'string', default: '3000' }, store: { type: 'string' }, 'lease-ms': { type: 'string' } } });
if (values.store === undefined) throw new Error('--store URL is required (sqlite:PATH, postgres://…, memory)');

// The same factory builds every per-request server; tasklatch is attached to each.
function buildServer() {
  const server = new McpServer({ name: 'sdk-v2-example', version: '1.0.0' });
  server.registerTool(
    'slow_echo',
    { description: 'Echoes text after delayMs', inputSchema: z.object({ text: z.string(), delayMs: z.number().int().min(0).max(600_000) }) },
    async ({ text, delayMs }, ctx) => {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, delayMs);
        ctx.mcpReq.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.mcpReq.signal.reason)), { once: true });
      });
      return { content: [{ type: 'text', text }], structuredContent: { text, pid: process.pid } };
    },
  );
  server.registerTool('ping', { description: 'Answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  return server;
}

const store = await openStore(values.store);
const leaseMs = values['lease-ms'] === undefined ? undefined : Number(values['lease-ms']);
const tasklatch = new SdkV2Tasklatch(buildServer(), { store, tasks: { slow_echo: 'required' }, ...(leaseMs === undefined ? {} : { worker: { leaseMs } }) });
await tasklatch.start();
const mcp = createMcpHandler(() => tasklatch.attach(buildServer()), { legacy: 'reject' });

// node:http in, web Request to the handler, web Response out.
const http = createServer(async (req, res) => {
  if (req.url !== '/mcp') return res.writeHead(404).end();
  const body = req.method === 'POST' ? Readable.toWeb(req) : undefined;
  const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: req.headers, body, duplex: 'half' });
  const response = await mcp.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) return res.end();
  for await (const chunk of response.body) res.write(chunk);
  res.end();
});
http.listen(Number(values.port), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`));

process.once('SIGTERM', async () => {
  http.close();
  http.closeAllConnections();
  await mcp.close();
  await tasklatch.close();
  await store.close();
});
