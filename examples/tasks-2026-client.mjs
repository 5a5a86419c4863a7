// A session of the 2026-07-28 generation (stateless, with the tasks extension) against
// `tasklatch serve`, in plain fetch so that every message shows:
//   node examples/tasks-2026-client.mjs [URL] [TOKEN]
// URL defaults to http://127.0.0.1:3000/mcp; TOKEN is a bearer token from --auth-tokens, if any.
const url = process.argv[2] ?? 'http://127.0.0.1:3000/mcp';
const token = process.argv[3];
const TASKS = 'io.modelcontextprotocol/tasks';
let id = 0;

// Every request stands alone: its protocol version and client capabilities travel in _meta,
// and the routing headers repeat the method and the name the body carries.
async function rpc(method, params = {}, name) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
  };
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-2026-client', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
    ...params._meta,
  };
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta } }) });
  const reply = await res.json();
  if (reply.error !== undefined) throw new Error(`${method}: ${reply.error.code} ${reply.error.message}`);
  return reply.result;
}

const discovered = await rpc('server/discover');
console.log('versions:', discovered.supportedVersions.join(', '), '| tasks extension:', TASKS in (discovered.capabilities.extensions ?? {}));

// The server decides that export_ledger runs as a task; the answer comes once the task is stored.
// The idempotency key makes a retry (after a timeout, a restart) return the same task.
const key = `export-2026-06-${Date.now()}`;
const task = await rpc(
  'tools/call',
  { name: 'export_ledger', arguments: { month: '2026-06', rows: 500, delayMs: 500 }, _meta: { 'io.tasklatch/idempotency-key': key } },
  'export_ledger',
);
console.log('created:', task.taskId, task.status, `(poll every ${task.pollIntervalMs} ms)`);
const retried = await rpc(
  'tools/call',
  { name: 'export_ledger', arguments: { month: '2026-06', rows: 500, delayMs: 500 }, _meta: { 'io.tasklatch/idempotency-key': key } },
  'export_ledger',
);
console.log('retry returns the same task:', retried.taskId === task.taskId);

// tasks/get until the task ends; its result comes inlined.
let current = task;
while (current.status === 'working' || current.status === 'input_required') {
  await new Promise((resolve) => setTimeout(resolve, Math.min(task.pollIntervalMs ?? 1000, 250)));
  current = await rpc('tasks/get', { taskId: task.taskId }, task.taskId);
}
console.log('status:', current.status);
console.log('result:', JSON.stringify(current.result?.structuredContent ?? current.error));
