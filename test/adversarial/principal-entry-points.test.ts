import { randomUUID } from 'node:crypto';
import { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, McpServer as V2McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parsePrincipalArg } from '../../src/cli/task-query-args.js';
import { JSON_RPC_CODES } from '../../src/core/json-rpc-codes.js';
import { createTaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import { attachTasklatch } from '../../src/wire-2025/sdk/attach-tasklatch.js';
import { RequestAuth } from '../../src/wire-2025/sdk/request-auth.js';
import { SdkV2Tasklatch } from '../../src/wire-2026/sdk/attach-tasklatch.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { Principal } from '../../src/tools/principal.js';
import { sdkClient, serveSdk } from '../support/sdk-http.js';
import { WITH_TASKS } from '../support/stateless.js';

// The library's ways in: a user's `authenticate` on a task server, an SDK server's `principal`
// resolver (or its `authInfo`), a session's own principal, a flag. Each refuses a principal that
// fails the core's check, naming the part, before any store call.

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A memory store whose calls are counted per auth key, so that a refused caller is seen never to reach it. */
function keyedStore(): { store: TaskStore; keys: Set<string> } {
  const keys = new Set<string>();
  const store = new Proxy(new MemoryStore(), {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const arg = args[0] as { authKey?: unknown; auth?: unknown; record?: { authKey?: unknown } } | undefined;
        for (const key of [arg?.authKey, arg?.auth, arg?.record?.authKey]) if (typeof key === 'string') keys.add(key);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, keys };
}

const SURROGATE_SUBJECT: Principal = { tenant: 'acme', subject: 'u\ud800' };

describe('library entry points', () => {
  it('attachTasklatch: a principal resolver giving a lone surrogate is refused with invalid request; its neighbour is served', async () => {
    const { store, keys } = keyedStore();
    const build = () => {
      const server = new V1McpServer({ name: 'user', version: '1.0.0' });
      server.registerTool('report', { description: 'r', inputSchema: { pages: z.number() } }, async ({ pages }) => ({
        content: [{ type: 'text', text: `${pages}` }],
      }));
      return server;
    };
    const first = build();
    // bob's token maps to a malformed principal, as a careless resolver over hostile claims would.
    const principal = (authInfo: { clientId?: string } | undefined) =>
      authInfo?.clientId === 'globex/bob' ? SURROGATE_SUBJECT : { tenant: 'acme', subject: 'alice' };
    const tasklatch = attachTasklatch(first, { store, tasks: { report: 'required' }, principal, callersIdentified: true, logger: createLogger('silent') });
    await tasklatch.start();
    let used = false;
    const http = await serveSdk(() => (used ? tasklatch.attach(build()) : ((used = true), first)));
    closers.push(async () => (await http.close(), await tasklatch.close()));
    const alice = await sdkClient(http.url, 'alice');
    const bob = await sdkClient(http.url, 'bob');
    closers.push(async () => (await alice.close(), await bob.close()));
    const call = { method: 'tools/call' as const, params: { name: 'report', arguments: { pages: 1 }, task: { ttl: 60_000 } } };
    await expect(bob.request(call, CreateTaskResultSchema)).rejects.toMatchObject({
      code: JSON_RPC_CODES.invalidRequest,
      message: expect.stringMatching(/Unauthorized: the caller's subject holds an unpaired surrogate \(U\+D800 at character 2\)/),
    });
    await expect(bob.experimental.tasks.getTask('any')).rejects.toMatchObject({ code: JSON_RPC_CODES.invalidRequest });
    expect((await alice.request(call, CreateTaskResultSchema)).task.status).toBe('working');
    expect([...keys].filter((k) => k !== 'acme/alice')).toEqual([]);
  });

  it('RequestAuth (the SDK TaskStore): a resolver giving a NUL is thrown as invalid request', () => {
    const auth = new RequestAuth(() => ({ tenant: 'ev\u0000il', subject: 'x' }));
    expect(() => auth.runAs({ token: '', clientId: 'x', scopes: [] }, () => auth.authKey())).toThrow(/the caller's tenant holds a control character \(U\+0000/);
    const defaults = new RequestAuth();
    expect(() => defaults.runAs({ token: '', clientId: 'app\udc00', scopes: [] }, () => defaults.authKey())).toThrow(/unpaired surrogate/);
  });

  it('SdkV2Tasklatch: a principal with a lone surrogate is refused with invalid request; its neighbour is served', async () => {
    const { store, keys } = keyedStore();
    const build = () => {
      const server = new V2McpServer({ name: 'v2', version: '1.0.0' });
      server.registerTool('echo', { description: 'e', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
        content: [{ type: 'text', text }],
      }));
      return server;
    };
    const tasklatch = new SdkV2Tasklatch(build(), {
      store,
      tasks: { echo: 'required' },
      execute: false,
      principal: (authInfo) => (authInfo?.clientId === 'mallory' ? { tenant: 'u\udc00', subject: 'm' } : { tenant: 'acme', subject: authInfo?.clientId ?? '' }),
      logger: createLogger('silent'),
    });
    await tasklatch.start();
    const handler = createMcpHandler(() => tasklatch.attach(build()), { legacy: 'stateless' });
    closers.push(async () => (await handler.close(), await tasklatch.close()));
    const call = async (client: string) => {
      const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': WITH_TASKS };
      const request = new Request('http://127.0.0.1/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'echo',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, _meta: meta } }),
      });
      return (await (await handler.fetch(request, { authInfo: { token: 'x', clientId: client, scopes: [] } })).json()) as {
        result?: Record<string, unknown>;
        error?: { code: number; message: string };
      };
    };
    const refused = await call('mallory');
    expect(refused.error?.code).toBe(JSON_RPC_CODES.invalidRequest);
    expect(refused.error?.message).toMatch(/the caller's tenant holds an unpaired surrogate \(U\+DC00 at character 2\)/);
    expect((await call('alice')).result?.taskId).toEqual(expect.any(String));
    expect([...keys].filter((k) => k !== 'acme/alice')).toEqual([]);
  });

  it('createTaskServer: a session principal that fails the check is refused when the session is made', async () => {
    const server = createTaskServer({ store: new MemoryStore(), tools: [], logger: createLogger('silent') });
    closers.push(() => server.close());
    expect(() => server.createSession({ tenant: 'acme', subject: 'a\u0085' })).toThrow(/its subject holds a control character \(U\+0085/);
    expect(() => server.createSession({ tenant: 'acme', subject: 'alice' })).not.toThrow();
  });

  it('--principal and --as: a malformed TENANT/SUBJECT is refused naming the part', () => {
    expect(parsePrincipalArg('--principal', 'acme/alice')).toEqual({ tenant: 'acme', subject: 'alice' });
    expect(() => parsePrincipalArg('--principal', 'acme/u\ud800')).toThrow(/--principal takes TENANT\/SUBJECT \(the subject holds an unpaired surrogate/);
    expect(() => parsePrincipalArg('--as', 'ac\u0001me/alice')).toThrow(/--as takes TENANT\/SUBJECT \(the tenant holds a control character \(U\+0001/);
    expect(() => parsePrincipalArg('--as', 'acme')).toThrow(/--as takes TENANT\/SUBJECT \(the subject is empty\)/);
  });
});
