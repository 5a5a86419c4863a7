// A worker process for the same server module: the handlers of its task tools, run from the store.
//   node examples/sdk-server/worker.mjs postgres://postgres@127.0.0.1:5432/test
import { openStore } from 'tasklatch';
import { tasklatchWorker } from 'tasklatch/sdk';
import { buildServer, TASKS } from './my-server.mjs';

const store = await openStore(process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test');
const worker = tasklatchWorker(buildServer(), { store, tasks: TASKS, worker: { leaseMs: 10_000 } });
await worker.start();
console.log(`worker ${worker.runtime.worker.id} running`);

process.once('SIGTERM', async () => {
  await worker.close();
  await store.close();
});
