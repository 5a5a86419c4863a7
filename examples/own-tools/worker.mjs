// A worker process of your own: the same tools module as the server, on the same store.
//   node examples/own-tools/worker.mjs postgres://postgres@127.0.0.1:5432/test
import { createRuntime, openStore } from 'tasklatch';
import tools from './tools.mjs';

const store = await openStore(process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test');
// A runtime without a wire: its worker claims the tasks of these tools from the store's outbox
// (tasks of tools it does not know stay for a worker that knows them).
const runtime = createRuntime({ store, tools, worker: { concurrency: 4, leaseMs: 10_000 } });
await runtime.start();
console.log(`worker ${runtime.worker.id} running`);

// SIGTERM drains: no new claims, running tasks finish (10 s at most), the rest go back.
process.once('SIGTERM', async () => {
  await runtime.close();
  await store.close();
});
