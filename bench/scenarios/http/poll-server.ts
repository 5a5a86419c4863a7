import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHttpServer } from '../../../src/http/http-server.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../../src/store/postgres/store.js';
import { SqliteStore } from '../../../src/store/sqlite/store.js';
import type { TaskStore } from '../../../src/store/types.js';
import { authKeyOf, type Principal } from '../../../src/tools/principal.js';
import { noopTool, tasklatchServer, toolArgs, TOOL, TTL_MS } from '../../lib/mcp.js';
import type { PollTarget, ServerRequest, ServerStart } from './protocol.js';
import { roundTrips } from '../../lib/round-trips.js';
import { runQueueWaitMs } from './run-queue.js';
import { createTask } from '../../../src/runtime/requests/create-task.js';

/**
 * The server under test, in a process of its own (started with `fork`, `--expose-gc`): tasklatch
 * over HTTP on one store, or a bare `node:http` server answering a fixed JSON body. Seeded tasks
 * are admitted through the service exactly as a `tools/call` is, and stay `working` (no worker
 * runs them), as a task a client polls does.
 */

const principal = (i: number): Principal => ({ tenant: `bench-${i}`, subject: 'poller' });
const token = (i: number) => `poll-token-${i}`;

let close: () => Promise<void> = async () => undefined;
let seed: (n: number) => Promise<PollTarget[]> = async () => [];
let seeded = 0;

async function openStore(start: ServerStart): Promise<TaskStore> {
  if (start.store === 'memory') return new MemoryStore();
  if (start.store === 'sqlite') return SqliteStore.open(start.location ?? ':memory:');
  return PostgresStore.open(start.location ?? '');
}

async function startTasklatch(start: ServerStart): Promise<string> {
  const store = await openStore(start);
  // No active-task or stored-task bound: the fleet's tasks all stay working at once.
  const server = await tasklatchServer(store, { execute: false, limits: { maxActiveTasks: null, maxStoredTasks: null } });
  const tokens = new Map(Array.from({ length: start.tokens }, (_, i) => [token(i), principal(i)] as const));
  // The memory scenario holds sessions and blocked results by the thousand: past the default
  // session caps, which bound a deployment, not what one session costs.
  const http = await startHttpServer({
    runtime: server.runtime,
    taskServer: server,
    host: '127.0.0.1',
    port: 0,
    tokens,
    sessions: { maxSessions: 1_000_000, maxPerCaller: 1_000_000 },
  });
  const descriptor = server.tools.descriptor(noopTool);
  seed = async (n) => {
    const out: PollTarget[] = [];
    for (let k = 0; k < n; k++) {
      const owner = seeded++ % start.tokens;
      const request = { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(seeded), task: { ttl: TTL_MS } } };
      const created = await createTask(server.runtime.guard, { auth: authKeyOf(principal(owner)), tool: descriptor, request });
      if (created.record === null) throw new Error(`seeding answered ${created.decision}`);
      out.push({ taskId: created.record.taskId, token: token(owner) });
    }
    return out;
  };
  close = async () => {
    await http.close();
    await server.close();
    await store.close();
  };
  return http.url;
}

async function startBare(start: ServerStart): Promise<string> {
  const body = start.bareBody ?? '{}';
  // Reads the body as the real server does, then answers the fixed JSON: the transport ceiling.
  const http = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  });
  http.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  close = async () => {
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

/** Resident set and V8 heap (with external memory) after two full collections (bytes). */
function memory(): { rss: number; heap: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the server process needs --expose-gc');
  gc();
  gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed + usage.external };
}

let cpuMark = process.cpuUsage();
let wallMark = performance.now();
let waitMark = runQueueWaitMs();
// PostgreSQL round trips of this process since the previous 'cpu' request (diagnostic).
let tripsMark = roundTrips();

async function answer(request: ServerRequest): Promise<unknown> {
  switch (request.op) {
    case 'start':
      return { url: request.start.kind === 'bare' ? await startBare(request.start) : await startTasklatch(request.start) };
    case 'seed':
      return { targets: await seed(request.n) };
    case 'rss':
      return memory();
    case 'cpu': {
      // CPU used since the previous 'cpu' request, and the wall time between them.
      const used = process.cpuUsage(cpuMark);
      const wall = performance.now() - wallMark;
      const waited = runQueueWaitMs() - waitMark;
      cpuMark = process.cpuUsage();
      wallMark = performance.now();
      waitMark = runQueueWaitMs();
      const trips = roundTrips() - tripsMark;
      tripsMark = roundTrips();
      return { cpuMs: (used.user + used.system) / 1000, systemMs: used.system / 1000, wallMs: wall, waitMs: waited, trips };
    }
    case 'stop':
      await close();
      setImmediate(() => process.exit(0));
      return {};
  }
}

process.on('message', (message: { id: number; request: ServerRequest }) => {
  answer(message.request).then(
    (value) => process.send?.({ id: message.id, value }),
    (error: unknown) => process.send?.({ id: message.id, error: String((error as Error).stack ?? error) }),
  );
});
