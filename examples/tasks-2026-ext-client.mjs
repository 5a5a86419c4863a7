// The official 2.x client with @modelcontextprotocol/ext-tasks, against any 2026-07-28 server
// with the tasks extension (`tasklatch serve`, examples/sdk-v2/server.mjs, or another):
//   node examples/tasks-2026-ext-client.mjs URL TOOL ARGS_JSON [TOKEN]
// e.g. node examples/tasks-2026-ext-client.mjs http://127.0.0.1:3000/mcp export_ledger '{"month":"2026-06","rows":50}'
// tasklatch/client supplies what ext-tasks leaves to the host: the POST of each stateless request.
import { modernRequester } from 'tasklatch/client';

const [url = 'http://127.0.0.1:3000/mcp', tool = 'export_ledger', args = '{"month":"2026-06","rows":50}', token] = process.argv.slice(2);

const requester = await modernRequester(url, { token, clientInfo: { name: 'tasks-2026-ext-client', version: '1.0.0' } });
try {
  const { tools } = await requester.client.listTools();
  console.log('tools:', tools.map((t) => t.name).join(' '));
  // The server decides; 'require' asks for a task and fails if the server would not make one.
  const execution = await requester.session.callTool(tool, JSON.parse(args), { task: { preference: 'require' } });
  console.log('created:', execution.kind === 'task' ? execution.handle.taskId : `(no task: ${execution.kind})`);
  const { outcome } = await execution.settle();
  console.log('status:', outcome.status);
  if (outcome.status === 'completed') console.log('result:', JSON.stringify(outcome.result.structuredContent ?? outcome.result.content));
  else if (outcome.status === 'failed') console.log('error:', JSON.stringify(outcome.error));
  // Any process can read the task later, by id: here, a fresh read of the stored task.
  if (execution.kind === 'task') console.log('read again:', (await requester.session.task(execution.handle.taskId).snapshot()).status);
} finally {
  await requester.close();
}
