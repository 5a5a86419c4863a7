// A server process of your own for your own tools on PostgreSQL: it admits and answers, and
// leaves running the tasks to worker processes (worker.mjs). Run any number of each:
//   node examples/own-tools/server.mjs postgres://postgres@127.0.0.1:5432/test [PORT]
import { createRuntime, openStore } from 'tasklatch';
import { startHttpServer } from 'tasklatch/http';
import tools from './tools.mjs';

const store = await openStore(process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test');
// execute: false — no worker in this process; `tasks/*` of every task on the store are answered here.
const runtime = createRuntime({ store, tools, execute: false });
await runtime.start();
// Both protocol generations over the one runtime (`generations: ['2026-07-28']` for the stateless one alone).
const http = await startHttpServer({ runtime, host: '127.0.0.1', port: Number(process.argv[3] ?? 3000) });
console.log(`listening on ${http.url}`);

process.once('SIGTERM', async () => {
  await http.close();
  await runtime.close();
  await store.close();
});
