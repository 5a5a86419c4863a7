// The user's McpServer, served over Streamable HTTP with tasklatch attached (PostgreSQL):
//   node examples/sdk-server/server.mjs postgres://postgres@127.0.0.1:5432/test [PORT]
// This process admits and answers; worker.mjs processes run the tasks. Run any number of each.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { openStore } from 'tasklatch';
import { attachTasklatch } from 'tasklatch/sdk';
import { buildServer, TASKS } from './my-server.mjs';

const store = await openStore(process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test');
// One call attaches tasklatch to the first session's server; each later session's server is
// attached to the same runtime. execute: false leaves the tasks to the worker processes.
let tasklatch = null;
const sessions = new Map();

const http = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString());
  let transport = sessions.get(req.headers['mcp-session-id']);
  if (transport === undefined) {
    transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => sessions.set(id, transport) });
    const server = buildServer();
    if (tasklatch === null) {
      tasklatch = attachTasklatch(server, { store, tasks: TASKS, execute: false });
      await tasklatch.start();
    } else tasklatch.attach(server);
    await server.connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
http.listen(Number(process.argv[3] ?? 3000), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`));

process.once('SIGTERM', async () => {
  http.close();
  http.closeAllConnections();
  await tasklatch?.close();
  await store.close();
});
