// A client that speaks no tasks (as many hosts do) against `tasklatch serve --task-tools`:
//   node examples/task-tools-client.mjs [URL]
// It calls the task-required export_ledger as a plain tool, gets the task id as text, and
// follows it with task_status and task_result, as a model would.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const client = new Client({ name: 'plain-client', version: '1.0.0' }); // no tasks capability
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2] ?? 'http://127.0.0.1:3000/mcp')));
console.log('tools:', (await client.listTools()).tools.map((t) => t.name).join(' '));

const started = await client.callTool({ name: 'export_ledger', arguments: { month: '2026-06', rows: 50, delayMs: 500 } });
console.log('answer:', started.content[0].text);
const { taskId } = started.structuredContent;

let status = 'working';
while (status === 'working' || status === 'input_required') {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const got = await client.callTool({ name: 'task_status', arguments: { taskId } });
  status = got.structuredContent?.status;
}
console.log('status:', status);
const result = await client.callTool({ name: 'task_result', arguments: { taskId } });
console.log('result:', JSON.stringify(result.structuredContent));
await client.close();
