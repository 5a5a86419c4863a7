// An SDK server that already uses experimental.tasks.registerToolTask, with tasklatch's
// durable, tenant-bound TaskStore in place of the SDK's in-memory one:
//   node examples/sdk-task-store/server.mjs sqlite:./.tasklatch/sdk-tasks.db [PORT]
// The work still runs in this process (see README: what it cannot give).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { openStore } from 'tasklatch';
import { SdkTaskStore } from 'tasklatch/sdk';
import { z } from 'zod';

const taskStore = new SdkTaskStore({ store: await openStore(process.argv[2] ?? 'sqlite:./.tasklatch/sdk-tasks.db') });

function buildServer() {
  const server = new McpServer(
    { name: 'sdk-task-store', version: '1.0.0' },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore },
  );
  server.experimental.tasks.registerToolTask(
    'slow_sum',
    { description: 'Adds two numbers, slowly', inputSchema: { a: z.number(), b: z.number() }, execution: { taskSupport: 'required' } },
    {
      async createTask({ a, b }, extra) {
        const task = await extra.taskStore.createTask({ ttl: 60_000 });
        setTimeout(() => extra.taskStore.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: String(a + b) }] }).catch(() => {}), 300);
        return { task };
      },
      getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: (_args, extra) => extra.taskStore.getTaskResult(extra.taskId),
    },
  );
  return server;
}

const sessions = new Map();
const http = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString());
  let transport = sessions.get(req.headers['mcp-session-id']);
  if (transport === undefined) {
    // bind(): each request's auth context (req.auth, set by your auth middleware) reaches the store.
    transport = taskStore.bind(
      new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => sessions.set(id, transport) }),
    );
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
http.listen(Number(process.argv[3] ?? 3000), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`));
process.once('SIGTERM', () => {
  http.close();
  http.closeAllConnections();
  process.exit(0);
});
