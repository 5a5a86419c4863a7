import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { demoTools } from '../../src/demo/demo-tools.js';
import { createLogger } from '../../src/runtime/log.js';
import { createTaskServer, type TaskServer, type WireOptions } from '../../src/wire-2025/server.js';
import type { RuntimeOptions } from '../../src/runtime/task-runtime.js';
import type { Principal } from '../../src/tools/principal.js';
import type { TaskTool } from '../../src/tools/tool.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';

export const ALICE: Principal = { tenant: 'acme', subject: 'alice' };
export const BOB: Principal = { tenant: 'globex', subject: 'bob' };

/** A task server over a memory store (unless given one) with the demo tools and per-client principals. */
export async function memoryServer(
  options: Partial<WireOptions & RuntimeOptions> & { extraTools?: TaskTool[] } = {},
): Promise<{ server: TaskServer; exportsDir: string; connect(principal?: Principal | null): Promise<Client> }> {
  const exportsDir = await mkdtemp(join(tmpdir(), 'tasklatch-exports-'));
  const server = createTaskServer({
    store: options.store ?? new MemoryStore(),
    tools: [...demoTools({ exportsDir }), ...(options.extraTools ?? [])],
    authenticate: options.authenticate ?? (({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null),
    logger: createLogger('silent'),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  await server.start();
  return {
    server,
    exportsDir,
    connect: async (principal: Principal | null = ALICE) => {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.createSession(principal).connect(serverSide);
      const client = new Client({ name: 'test', version: '1.0.0' });
      await client.connect(clientSide);
      return client;
    },
  };
}

export function callAsTask(client: Client, name: string, args: Record<string, unknown>, extra: { key?: string; ttl?: number } = {}) {
  return client.request(
    {
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        task: extra.ttl === undefined ? {} : { ttl: extra.ttl },
        ...(extra.key === undefined ? {} : { _meta: { 'io.tasklatch/idempotency-key': extra.key } }),
      },
    },
    CreateTaskResultSchema,
  );
}

export function callPlain(client: Client, name: string, args: Record<string, unknown>) {
  return client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema);
}

/** The JSON-RPC error a promise rejects with: `{ code, message }` as sent (the client's "MCP error N: " prefix removed). */
export async function rpcError(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code?: number; message: string };
    return { code: e.code ?? NaN, message: e.message.replace(/^MCP error -?\d+: /, '') };
  }
  throw new Error('expected a JSON-RPC error');
}
