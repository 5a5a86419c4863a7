import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../src/runtime/log.js';
import { ProgressGate } from '../../src/runtime/progress-gate.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { awaitTaskResult } from '../../src/service/result-wait.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { createTaskServer } from '../../src/wire-2025/server.js';
import { startHttpServer } from '../../src/http/http-server.js';
import type { Principal } from '../../src/tools/principal.js';
import { ALICE } from '../support/mcp.js';
import { readEvents, rpc, startListen } from '../support/stateless.js';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { until } from '../support/until.js';

// Code outside a handler's steps runs again after a sleep (and a retry's wait, a takeover): the
// progress it reports again must not reach the requestor as progress going back.

const AUTH = 'acme/alice';
const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of opened.splice(0).reverse()) await item.close();
});

/** Reports 1 and 2 outside any step, sleeps durably, then 3: the run after the wake reports 1, 2, 3. */
const replayingTool = (reported: number[], ready: Promise<void> = Promise.resolve()) =>
  defineTool({
    name: 'replaying',
    description: 'progress outside steps, around a sleep',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    handler: async (_args, ctx) => {
      // Until the requestor has its task (and the session its progressToken).
      await ready;
      for (const value of [1, 2]) {
        reported.push(value);
        await ctx.reportProgress(value, 3, `at ${value}`);
        // Apart, so that the store's coalescing (about 50 ms) keeps each report.
        await new Promise((resolve) => setTimeout(resolve, 80));
      }
      await ctx.step.sleep('rest', 150);
      reported.push(3);
      await ctx.reportProgress(3, 3, 'at 3');
      await new Promise((resolve) => setTimeout(resolve, 80));
      return { content: [{ type: 'text', text: 'done' }] };
    },
  }) as unknown as TaskTool;

describe('ProgressGate', () => {
  it('passes only progress above the highest passed, per task, and forgets an ended task', () => {
    const gate = new ProgressGate();
    expect([1, 2, 1, 2, 3, 3, 0].map((p) => gate.admit('a', p))).toEqual([true, true, false, false, true, false, false]);
    expect(gate.admit('b', 1)).toBe(true);
    gate.forget('a');
    expect(gate.admit('a', 1)).toBe(true);
  });

  it('remembers a bounded number of tasks, the least recently reported forgotten first', () => {
    const gate = new ProgressGate(2);
    gate.admit('a', 5);
    gate.admit('b', 5);
    gate.admit('a', 6);
    gate.admit('c', 5);
    expect(gate.size).toBe(2);
    expect(gate.admit('a', 6)).toBe(false);
    expect(gate.admit('b', 1)).toBe(true);
  });
});

describe('2025-11-25: a client with a progressToken', () => {
  it('receives strictly increasing progress across a sleep that re-runs the code before it', async () => {
    const reported: number[] = [];
    let open = (): void => undefined;
    const ready = new Promise<void>((resolve) => (open = resolve));
    const server = createTaskServer({
      store: new MemoryStore(),
      tools: [replayingTool(reported, ready)],
      authenticate: () => ALICE,
      logger: createLogger('silent'),
    });
    opened.push(server);
    await server.start();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.createSession(ALICE).connect(serverSide);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    const seen: Array<{ progress: number; total?: number; message?: string }> = [];
    const created = await client.request({ method: 'tools/call', params: { name: 'replaying', arguments: {}, task: {} } }, CreateTaskResultSchema, {
      onprogress: (p) => void seen.push({ progress: p.progress, total: p.total, message: p.message }),
    });
    open();
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.content[0]).toMatchObject({ text: 'done' });
    await until(() => (seen.length >= 3 ? true : undefined));
    // The handler did go back; the client never saw it, and each value kept its total and message.
    expect(reported).toEqual([1, 2, 1, 2, 3]);
    expect(seen).toEqual([1, 2, 3].map((p) => ({ progress: p, total: 3, message: `at ${p}` })));
    // The task ended: the runtime remembers nothing of it.
    expect((server.runtime as unknown as { progressGate: ProgressGate }).progressGate.size).toBe(0);
  });
});

describe('2026-07-28: a subscription to the task', () => {
  it('carries the task’s changes and no progress that could go back (this generation carries no task progress)', async () => {
    const reported: number[] = [];
    let open = (): void => undefined;
    const ready = new Promise<void>((resolve) => (open = resolve));
    const server = createTaskServer({
      store: new MemoryStore(),
      tools: [replayingTool(reported, ready)],
      authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
      logger: createLogger('silent'),
    });
    opened.push(server);
    await server.start();
    const http = await startHttpServer({
      runtime: server.runtime,
      taskServer: server,
      host: '127.0.0.1',
      port: 0,
      tokens: new Map([['token-alice', ALICE]]),
    });
    opened.push(http);
    const created = await rpc(http.url, 'tools/call', { name: 'replaying', arguments: {} }, { token: 'token-alice' });
    const taskId = created.result!.taskId as string;
    const { response, abort } = startListen(http.url, 'token-alice', [taskId], 'listen-progress');
    const res = await response;
    open();
    const messages = await readEvents(res, abort, (got) => got.some((m) => m.params.status === 'completed'));
    expect(reported).toEqual([1, 2, 1, 2, 3]);
    expect(messages[0]?.method).toBe('notifications/subscriptions/acknowledged');
    expect(messages.slice(1).every((m) => m.method === 'notifications/tasks' && m.params.taskId === taskId)).toBe(true);
    expect(messages.at(-1)?.params).toMatchObject({ status: 'completed' });
  });
});

describe.each([sqliteHarness, postgresHarness])('$name: progress relayed from another process', (harness) => {
  it('reaches the requestor’s runtime strictly increasing across a sleep', async () => {
    const [runStore, serveStore] = await harness.openMany('progress-increases', 2);
    opened.push(runStore!, serveStore!);
    const reported: number[] = [];
    const tool = replayingTool(reported);
    const make = (store: TaskStore, execute: boolean): TaskRuntime => {
      const r = createRuntime({ store, tools: [tool], execute, logger: createLogger('silent'), sweepIntervalMs: 0, inputDeadlineIntervalMs: 0 });
      opened.push(r);
      return r;
    };
    const running = make(runStore!, true);
    const serving = make(serveStore!, false);
    const heard: number[] = [];
    serving.onProgress((_taskId, progress) => void heard.push(progress));
    await Promise.all([running.start(), serving.start()]);
    const created = await createTask(serving.guard, {
      auth: AUTH,
      tool: { name: 'replaying', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'replaying', arguments: {}, task: {} } },
    });
    const taskId = created.record!.taskId;
    const done = await awaitTaskResult(serving.guard, { auth: AUTH, taskId });
    expect(done.record?.status).toBe('completed');
    await until(() => (heard.includes(3) ? true : undefined));
    expect(reported).toEqual([1, 2, 1, 2, 3]);
    // Best effort across processes (a report may be coalesced away), but never going back.
    expect(heard.every((value, i) => i === 0 || value > heard[i - 1]!)).toBe(true);
    expect(heard.at(-1)).toBe(3);
  });
});
