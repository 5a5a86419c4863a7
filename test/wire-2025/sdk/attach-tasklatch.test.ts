import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../../src/runtime/log.js';
import { attachTasklatch, SdkTasklatch } from '../../../src/wire-2025/sdk/attach-tasklatch.js';
import { checkAttachable, isSupportedSdkVersion, sdkVersion } from '../../../src/wire-2025/sdk/sdk-internals.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { sdkClient, serveSdk } from '../../support/sdk-http.js';
import { sqliteHarness } from '../../support/stores.js';
import { until } from '../../support/until.js';

// A user's McpServer with three registerTool tools; tasklatch attached makes two of them tasks.

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const runs: Array<{ caller: string | undefined; aborted: () => boolean }> = [];

function userServer(): McpServer {
  const server = new McpServer({ name: 'user-server', version: '1.0.0' });
  const shape = { pages: z.number().int().min(1), progress: z.boolean().optional() };
  server.registerTool('slow_report', { description: 'slow', inputSchema: shape }, async ({ pages, progress }, extra) => {
    runs.push({ caller: extra.authInfo?.clientId, aborted: () => extra.signal.aborted });
    for (let page = 0; page < pages; page++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      extra.signal.throwIfAborted();
      const token = extra._meta?.progressToken;
      if (progress === true && token !== undefined)
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: page + 1, total: pages } });
    }
    return { content: [{ type: 'text', text: `${pages} pages` }], structuredContent: { pages, caller: extra.authInfo?.clientId } };
  });
  server.registerTool('count_words', { description: 'words', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: String(text.split(' ').length) }],
  }));
  server.registerTool('ping', { description: 'pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  server.registerResource('readme', 'memo://readme', { description: 'a resource' }, async () => ({ contents: [{ uri: 'memo://readme', text: 'hello' }] }));
  return server;
}

const TASKS = { slow_report: 'required', count_words: 'optional' } as const;

async function fleet(options: { taskTools?: boolean } = {}) {
  const store = await sqliteHarness.open('sdk_attach');
  const first = userServer();
  const tasklatch = attachTasklatch(first, { store, tasks: TASKS, callersIdentified: true, logger: createLogger('silent'), ...options });
  await tasklatch.start();
  let used = false;
  const http = await serveSdk(() => {
    if (!used) return ((used = true), first);
    return tasklatch.attach(userServer());
  });
  closers.push(async () => {
    await http.close();
    await tasklatch.close();
    await store.close();
  });
  return { url: http.url, store };
}

const client = async (url: string, token: string, capabilities?: Record<string, unknown>) => {
  const c = await sdkClient(url, token, capabilities);
  closers.push(() => c.close());
  return c;
};

describe('attachTasklatch on an McpServer', () => {
  it('runs the marked tools as durable tasks and leaves everything else of the server as it was', async () => {
    const { url, store } = await fleet();
    const alice = await client(url, 'alice');
    const tools = (await alice.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport]);
    expect(tools).toEqual([
      ['slow_report', 'required'],
      ['count_words', 'optional'],
      ['ping', 'forbidden'],
    ]);
    // Untouched: the plain tool, a plain call of the optional one, the resource.
    expect((await alice.callTool({ name: 'ping' })).content).toEqual([{ type: 'text', text: 'pong' }]);
    expect((await alice.callTool({ name: 'count_words', arguments: { text: 'a b c' } })).content).toEqual([{ type: 'text', text: '3' }]);
    expect((await alice.readResource({ uri: 'memo://readme' })).contents).toEqual([{ uri: 'memo://readme', text: 'hello' }]);
    const { task } = await alice.request(
      { method: 'tools/call', params: { name: 'slow_report', arguments: { pages: 3 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    // Stored before the reply, in tasklatch's store, under the caller.
    expect((await store.get({ authKey: 'acme/alice', taskId: task.taskId, now: Date.now() })).record?.toolName).toBe('slow_report');
    const result = await alice.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ pages: 3, caller: 'acme/alice' });
    // What the handler reports through extra.sendNotification reaches the requestor's session.
    const progress: number[] = [];
    const withProgress = await alice.request(
      { method: 'tools/call', params: { name: 'slow_report', arguments: { pages: 3, progress: true }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
      { onprogress: (p) => progress.push(p.progress) },
    );
    await alice.request({ method: 'tasks/result', params: { taskId: withProgress.task.taskId } }, CallToolResultSchema);
    await until(() => (progress.length < 3 ? undefined : true));
    expect(progress).toEqual([1, 2, 3]);
    // A task call with arguments the tool's schema refuses stores nothing.
    await expect(
      alice.request({ method: 'tools/call', params: { name: 'slow_report', arguments: { pages: 0 }, task: {} } }, CreateTaskResultSchema),
    ).rejects.toThrow(/-32602/);
    expect((await alice.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId, withProgress.task.taskId]);
  });

  it('keeps tenants apart and stops the handler on cancellation', async () => {
    const { url } = await fleet();
    const alice = await client(url, 'alice');
    const bob = await client(url, 'bob');
    const { task } = await alice.request(
      { method: 'tools/call', params: { name: 'slow_report', arguments: { pages: 200 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await expect(bob.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/Task not found/);
    await expect(bob.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/Task not found/);
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([]);
    await until(() => (runs.at(-1)?.caller !== 'acme/alice' ? undefined : true));
    const run = runs.at(-1)!;
    expect((await alice.experimental.tasks.cancelTask(task.taskId)).status).toBe('cancelled');
    await until(() => (!run.aborted() ? undefined : true));
    expect(run.aborted()).toBe(true);
    expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
  });

  it('with taskTools, a client without tasks calls the required tool plainly and follows it', async () => {
    const { url } = await fleet({ taskTools: true });
    const plain = await client(url, 'alice', {});
    const names = (await plain.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport]);
    expect(names.slice(0, 1)).toEqual([['slow_report', undefined]]);
    expect(names.map((n) => n[0])).toEqual(['slow_report', 'count_words', 'ping', 'task_status', 'task_result', 'task_cancel']);
    const started = await plain.callTool({ name: 'slow_report', arguments: { pages: 1 } });
    const taskId = (started.structuredContent as { taskId: string }).taskId;
    for (let i = 0; i < 100; i++) {
      const got = await plain.callTool({ name: 'task_status', arguments: { taskId } });
      if ((got.structuredContent as { status: string }).status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    expect((await plain.callTool({ name: 'task_result', arguments: { taskId } })).structuredContent).toEqual({ pages: 1, caller: 'acme/alice' });
  });
});

describe('attach-time errors', () => {
  const store = () => new MemoryStore();
  const attach =
    (server: McpServer, tasks: Record<string, string> = TASKS) =>
    () =>
      new SdkTasklatch(server, { store: store(), tasks: tasks as never }).attach(server);

  it('supports the installed SDK and refuses versions outside the range', () => {
    expect(isSupportedSdkVersion(sdkVersion())).toBe(true);
    expect(sdkVersion()).toBe('1.32.2');
    for (const v of ['1.32.1', '1.20.0', '2.0.0', '1.33.0-beta.1'])
      expect(() => checkAttachable(userServer(), v)).toThrow(`@modelcontextprotocol/sdk ${v} is not supported (supported: >=1.32.2 <2)`);
  });

  it('refuses a server that already serves tasks with another store', () => {
    const server = new McpServer(
      { name: 'x', version: '1' },
      { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore: new InMemoryTaskStore() },
    );
    server.registerTool('slow_report', { description: 'slow' }, async () => ({ content: [] }));
    expect(attach(server, { slow_report: 'required' })).toThrow(/already serves tasks with another store/);
  });

  it('refuses unknown, mismarked and task-registered tools, and a connected server', async () => {
    expect(attach(userServer(), { nope: 'required' })).toThrow('cannot attach tasklatch: no tool nope is registered on this server');
    expect(attach(userServer(), { ping: 'sometimes' })).toThrow(/tool ping is marked "sometimes"/);
    expect(attach(userServer(), {})).toThrow(/no tool is marked/);
    const taskTool = new McpServer({ name: 'x', version: '1' });
    taskTool.experimental.tasks.registerToolTask(
      'own_task',
      { description: 'x' },
      { createTask: async () => ({ task: {} as never }), getTask: async () => ({}) as never, getTaskResult: async () => ({}) as never },
    );
    expect(attach(taskTool, { own_task: 'required' })).toThrow(/registered with experimental.tasks.registerToolTask; register it with registerTool/);
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const connected = userServer();
    await connected.connect(InMemoryTransport.createLinkedPair()[1]);
    expect(attach(connected)).toThrow(/already connected; attach before server.connect/);
    await connected.close();
  });
  it("names its app, and digests each tool's definition as the SDK lists it, output schema included", async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const reportServer = (total: z.ZodType) => {
      const server = new McpServer({ name: 'reports', version: '1.0.0' });
      server.registerTool('build_report', { description: 'a report', inputSchema: { month: z.string() }, outputSchema: { total } }, async () => ({
        content: [],
        structuredContent: { total: 1 },
      }));
      return server;
    };
    const store = new MemoryStore();
    const numbers = reportServer(z.number());
    const tasklatch = attachTasklatch(numbers, { store, app: 'reports', tasks: { build_report: 'required' }, execute: false, logger: createLogger('silent') });
    expect(tasklatch.runtime.app).toBe('reports');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await numbers.connect(serverSide);
    const lister = new Client({ name: 'test', version: '1.0.0' });
    await lister.connect(clientSide);
    const listed = (await lister.listTools()).tools.find((t) => t.name === 'build_report')!;
    await lister.close();
    const { toolDigest } = await import('../../../src/core/digest.js');
    expect(listed.outputSchema).toBeDefined();
    expect(tasklatch.runtime.tools.digest('build_report')).toBe(
      toolDigest({ name: listed.name, inputSchema: listed.inputSchema, outputSchema: listed.outputSchema, execution: listed.execution }),
    );
    // Another output schema is another definition; an attach without an app is the default app's.
    const strings = new SdkTasklatch(reportServer(z.string()), { store, tasks: { build_report: 'required' }, execute: false, logger: createLogger('silent') });
    expect(strings.runtime.app).toBe('default');
    expect(strings.runtime.tools.digest('build_report')).not.toBe(tasklatch.runtime.tools.digest('build_report'));
    // The version follows the registered callback's text: the same code, the same version; another callback, another.
    const sameCode = new SdkTasklatch(reportServer(z.number()), { store, tasks: { build_report: 'required' }, execute: false, logger: createLogger('silent') });
    expect(sameCode.runtime.tools.version('build_report')).toBe(tasklatch.runtime.tools.version('build_report'));
    const edited = new McpServer({ name: 'reports', version: '1.0.0' });
    edited.registerTool('build_report', { description: 'a report', inputSchema: { month: z.string() }, outputSchema: { total: z.number() } }, async () => ({
      content: [],
      structuredContent: { total: 2 },
    }));
    const editedCode = new SdkTasklatch(edited, { store, tasks: { build_report: 'required' }, execute: false, logger: createLogger('silent') });
    expect(editedCode.runtime.tools.version('build_report')).not.toBe(tasklatch.runtime.tools.version('build_report'));
    expect(() => new SdkTasklatch(reportServer(z.string()), { store, app: ' reports', tasks: { build_report: 'required' } })).toThrow(
      /must not start or end with a space/,
    );
  });
});
