// The official SDK client against the fleet: a task created through URL, followed through OTHER_URL.
//   node examples/sdk-server/client.mjs URL [OTHER_URL]
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

async function connect(url) {
  const client = new Client({ name: 'sdk-server-client', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}
const first = await connect(process.argv[2] ?? 'http://127.0.0.1:3000/mcp');
const second = process.argv[3] === undefined ? first : await connect(process.argv[3]);

const { tools } = await first.listTools();
console.log('tools:', tools.map((t) => `${t.name}(${t.execution?.taskSupport ?? 'plain'})`).join(' '));
console.log('ping:', (await first.callTool({ name: 'ping' })).content[0].text);
console.log('count_words plain:', (await first.callTool({ name: 'count_words', arguments: { text: 'one two three' } })).content[0].text);

const { task } = await first.request(
  { method: 'tools/call', params: { name: 'render_report', arguments: { quarter: '2026-Q2', pages: 5 }, task: { ttl: 60_000 } } },
  CreateTaskResultSchema,
);
console.log('created:', task.taskId, task.status);
let status = task.status;
while (status === 'working') {
  await new Promise((resolve) => setTimeout(resolve, 200));
  status = (await second.experimental.tasks.getTask(task.taskId)).status;
}
console.log('status:', status);
const result = await second.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
console.log('result:', result.content[0].text, JSON.stringify(result.structuredContent));
await first.close();
if (second !== first) await second.close();
