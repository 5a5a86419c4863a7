// A session with the official MCP SDK client against `tasklatch serve`:
//   node examples/export-client.mjs [URL] [TOKEN]
// URL defaults to http://127.0.0.1:3000/mcp; TOKEN is a bearer token from --auth-tokens, if any.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:3000/mcp');
const token = process.argv[3];
const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };

const client = new Client({ name: 'export-client', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
console.log('task capabilities:', JSON.stringify(client.getServerCapabilities()?.tasks));

// A task-augmented call: the server answers at once with a task, after the record is stored.
// The idempotency key makes a retry (after a timeout, a restart) return the same task.
const key = `export-2026-06-${Date.now()}`;
const { task } = await client.request(
  {
    method: 'tools/call',
    params: {
      name: 'export_ledger',
      arguments: { month: '2026-06', rows: 500, delayMs: 1500 },
      task: { ttl: 10 * 60_000 },
      _meta: { 'io.tasklatch/idempotency-key': key },
    },
  },
  CreateTaskResultSchema,
);
console.log('created:', task.taskId, task.status);

// Poll, respecting the server's pollInterval.
let current = task;
while (current.status === 'working' || current.status === 'input_required') {
  await new Promise((resolve) => setTimeout(resolve, current.pollInterval ?? 1000));
  current = await client.experimental.tasks.getTask(task.taskId);
  console.log('status:', current.status, current.statusMessage ?? '');
}

// tasks/result returns what the tool call would have returned.
const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
console.log('result:', JSON.stringify(result.structuredContent ?? result.content));
await client.close();
