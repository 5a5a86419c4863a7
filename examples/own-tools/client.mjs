// Drives count_primes through any server of the fleet with the official SDK client:
//   node examples/own-tools/client.mjs URL [OTHER_URL]
// The task is created through URL and followed through OTHER_URL (default: the same).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

async function connect(url) {
  const client = new Client({ name: 'own-tools-client', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const first = await connect(process.argv[2] ?? 'http://127.0.0.1:3000/mcp');
const second = process.argv[3] === undefined ? first : await connect(process.argv[3]);
const { tools } = await first.listTools();
console.log('tools:', tools.map((t) => `${t.name}(${t.execution?.taskSupport ?? 'forbidden'})`).join(' '));

const { task } = await first.request(
  { method: 'tools/call', params: { name: 'count_primes', arguments: { below: 200_000, delayMs: 300 }, task: { ttl: 60_000 } } },
  CreateTaskResultSchema,
);
console.log('created:', task.taskId, task.status);
let status = task.status;
while (status === 'working') {
  await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 500));
  status = (await second.experimental.tasks.getTask(task.taskId)).status;
}
console.log('status:', status);
const result = await second.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
console.log('result:', result.content[0]?.text);
await first.close();
if (second !== first) await second.close();
