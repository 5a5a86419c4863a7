// A server process of your own for your own tools on PostgreSQL: it admits and answers, and
// leaves running the tasks to worker processes (worker.mjs). Run any number of each:
//   node examples/own-tools/server.mjs postgres://postgres@127.0.0.1:5432/test [PORT]
import { createRuntime, openStore } from 'tasklatch';
import { createTaskServer, startHttpServer } from 'tasklatch/mcp';
import tools from './tools.mjs';

const store = await openStore(process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test');
// execute: false — no worker in this process; `tasks/*` of every task on the store are answered here.
const runtime = createRuntime({ store, tools, execute: false });
const server = createTaskServer({ runtime });
await runtime.start();
await server.start();
const http = await startHttpServer(server, { host: '127.0.0.1', port: Number(process.argv[3] ?? 3000) });
console.log(`listening on ${http.url}`);

process.once('SIGTERM', async () => {
  await http.close();
  await server.close();
  await runtime.close();
  await store.close();
});
