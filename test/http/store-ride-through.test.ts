import { EventEmitter, once } from 'node:events';
import { Writable } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { Principal } from '../../src/tools/principal.js';
import { defineTool } from '../../src/tools/tool.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { sdkClient } from '../support/sdk-http.js';
import { collectEvents, rpc, startListen } from '../support/stateless.js';
import { TcpProxy, targetOf } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';
import { CALLERS } from '../support/wire-server.js';

// A real outage: PostgreSQL behind a TCP proxy the test cuts (every connection reset, every new
// one refused) and restores, driven by events (the refused connections, the server's log). An
// outage shorter than the ride-through bound ends nothing: the official SDK client's
// callToolStream, a held tasks/result and a 2026-07-28 subscription wait through it, and the
// tasks complete. Past the bound, the retryable -32001 (503 + Retry-After); a handler that asks
// while the store is away stops, is run again, and its task completes, never failed.

const ELICIT = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} };

interface Served {
  proxy: TcpProxy;
  url: string;
  server: TaskServer;
  logs: string[];
  started: EventEmitter;
  /** Lets every handler waiting on the gate go on. */
  open(): void;
  close(): Promise<void>;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** tasklatch over HTTP on a PostgreSQL behind a proxy, with `gated` (returns once the gate opens) and `asker` (asks once it opens). */
async function serve(label: string, options: { storeOutageMs: number; leaseMs: number }): Promise<Served> {
  const direct = await freshPostgresUrl(label);
  const proxy = await TcpProxy.start(targetOf(direct));
  const store = await PostgresStore.open(proxy.route(direct), { poolSize: 8 });
  const started = new EventEmitter();
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const gated = defineTool({
    name: 'gated',
    description: 'returns once the test opens the gate',
    inputSchema: z.object({}),
    execution: { taskSupport: 'optional' },
    async handler(_args, ctx) {
      started.emit('started', ctx.taskId);
      await gate;
      return { content: [{ type: 'text', text: `done ${ctx.taskId}` }] };
    },
  });
  const asker = defineTool({
    name: 'asker',
    description: 'asks once the test opens the gate',
    inputSchema: z.object({}),
    execution: { taskSupport: 'optional' },
    async handler(_args, ctx) {
      // A step first: the run has read its journal before the outage, so the outage meets its ask.
      await ctx.step.do('begin', () => true);
      started.emit('started', ctx.taskId);
      await gate;
      const answer = await ctx.elicit({ message: 'Go on?', requestedSchema: { type: 'object' } }, { key: 'go' });
      return { content: [{ type: 'text', text: `asked: ${answer.action}` }] };
    },
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const server = createTaskServer({
    store,
    tools: [gated, asker],
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: pino({ level: 'info' }, sink),
    limits: { pollInterval: 100, storeOutageMs: options.storeOutageMs },
    worker: { leaseMs: options.leaseMs, pollMs: 100 },
    drainMs: 100,
  });
  await server.start();
  const http: RunningHttp = await startHttpServer({
    runtime: server.runtime,
    taskServer: server,
    host: '127.0.0.1',
    port: 0,
    tokens: new Map<string, Principal>(Object.entries(CALLERS)),
  });
  const close = async () => {
    proxy.restore();
    await http.close();
    await server.close();
    await store.close();
    await proxy.close();
  };
  closers.push(close);
  return { proxy, url: http.url, server, logs, started, open, close };
}

/** Resolves with the task id of the next handler that starts. */
function nextStart(served: Served): Promise<string> {
  return once(served.started, 'started').then(([taskId]) => taskId as string);
}

/** Waits for `count` connections the cut proxy refused: the server tried its store and met the outage. */
async function refusals(proxy: TcpProxy, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await once(proxy, 'refused');
}

/** The fields of a log line when it is the worker's event `event`. */
function eventOf(line: string, event: string): Record<string, unknown> | undefined {
  const fields = JSON.parse(line) as Record<string, unknown>;
  return fields.event === event ? fields : undefined;
}

describe('a PostgreSQL outage shorter than the ride-through bound', () => {
  it('ends no SDK stream, held tasks/result or subscription: they wait, and the tasks complete', async () => {
    const served = await serve('ride_through', { storeOutageMs: 60_000, leaseMs: 60_000 });
    const client: Client = await sdkClient(served.url, 'token-alice');
    closers.push(() => client.close());

    // The official SDK client's stream: tools/call, then tasks/get every pollInterval.
    const streamed: Array<{ type: string; [key: string]: unknown }> = [];
    const startedA = nextStart(served);
    const stream = (async () => {
      for await (const message of client.experimental.tasks.callToolStream({ name: 'gated', arguments: {} }, CallToolResultSchema, {
        task: { ttl: 60_000 },
      }))
        streamed.push(message as never);
    })();
    const taskA = await startedA;
    // A held tasks/result on the same task.
    const held = client.experimental.tasks.getTaskResult(taskA, CallToolResultSchema);
    // A 2026-07-28 task and its subscription.
    const startedB = nextStart(served);
    const taskB = (await rpc(served.url, 'tools/call', { name: 'gated', arguments: {} }, { token: 'token-alice' })).result!.taskId as string;
    expect(await startedB).toBe(taskB);
    const listening = startListen(served.url, 'token-alice', [taskB], 'sub');
    closers.push(async () => listening.abort.abort());
    const sub = collectEvents(listening.response);
    await until(() => (sub.messages.some((m) => m.method === 'notifications/tasks') ? true : undefined), 10_000);
    await until(() => (streamed.some((m) => m.type === 'taskStatus') ? true : undefined), 10_000);

    served.proxy.cut();
    // The stream's polls meet the outage (each is a connection the cut proxy refuses).
    await refusals(served.proxy, 3);
    served.open();
    // Both runs' terminal writes meet it too, and wait to write again.
    const unknown = await until(() => {
      const lines = served.logs.map((line) => eventOf(line, 'run:writeUnknown')).filter((fields) => fields?.write === 'terminal');
      return lines.length >= 2 ? lines : undefined;
    }, 20_000);
    // One line for each run, saying whose run it is and the store's error.
    expect(new Set(unknown.map((fields) => fields!.taskId))).toEqual(new Set([taskA, taskB]));
    expect(unknown.every((fields) => typeof fields!.workerId === 'string' && (fields!.err as { message?: unknown }).message !== undefined)).toBe(true);
    served.proxy.restore();

    await stream;
    expect(streamed.filter((m) => m.type === 'error')).toEqual([]);
    expect(streamed.at(-1)).toMatchObject({ type: 'result', result: { content: [{ text: `done ${taskA}` }] } });
    expect(await held).toMatchObject({ content: [{ text: `done ${taskA}` }] });
    const ended = await until(() => sub.messages.find((m) => (m.params as { status?: string } | undefined)?.status === 'completed'), 20_000);
    expect(ended).toMatchObject({ method: 'notifications/tasks', params: { taskId: taskB, status: 'completed' } });
    expect(sub.messages.filter((m) => 'error' in m)).toEqual([]);
    expect(served.logs.filter((line) => line.includes('"msg":"store unavailable"'))).toEqual([]);
  }, 90_000);
});

describe('a PostgreSQL outage longer than the ride-through bound', () => {
  it('answers -32001 on both wires; a run that asks meanwhile stops and runs again; the task completes, never failed', async () => {
    const served = await serve('past_bound', { storeOutageMs: 300, leaseMs: 2000 });
    const client: Client = await sdkClient(served.url, 'token-alice');
    closers.push(() => client.close());
    const started = nextStart(served);
    const taskId = (await rpc(served.url, 'tools/call', { name: 'asker', arguments: {} }, { token: 'token-alice', capabilities: ELICIT })).result!
      .taskId as string;
    await started;

    served.proxy.cut();
    const got = await rpc(served.url, 'tasks/get', { taskId }, { token: 'token-alice' });
    expect([got.status, got.error]).toEqual([503, { code: -32001, message: 'Store unavailable: retry later', data: { retryAfterMs: 2000 } }]);
    const legacy = await client.experimental.tasks.getTask(taskId).then(
      () => null,
      (e: unknown) => e as { code: number; data: unknown },
    );
    expect([legacy?.code, legacy?.data]).toEqual([-32001, { retryAfterMs: 2000 }]);
    const listening = startListen(served.url, 'token-alice', [taskId], 'down');
    const refused = await listening.response;
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '2']);
    await refused.text();

    // The handler asks while the store is away: its question cannot be stored.
    served.open();
    await until(() => (served.logs.some((line) => eventOf(line, 'run:storeFailed')?.what === 'question not stored') ? true : undefined), 20_000);
    served.proxy.restore();

    // Run again once the store is back: the question is stored, answered, and the task completes.
    const asking = await until(async () => {
      const read = await rpc(served.url, 'tasks/get', { taskId }, { token: 'token-alice' });
      const status = (read.result as { status?: string } | undefined)?.status;
      return status === 'input_required' || status === 'failed' || status === 'completed' ? read.result! : undefined;
    }, 30_000);
    expect(asking).toMatchObject({ status: 'input_required' });
    const update = await rpc(served.url, 'tasks/update', { taskId, inputResponses: { go: { action: 'accept', content: {} } } }, { token: 'token-alice' });
    expect(update.result).toEqual({ resultType: 'complete' });
    const done = await until(async () => {
      const read = await rpc(served.url, 'tasks/get', { taskId }, { token: 'token-alice' });
      const status = (read.result as { status?: string } | undefined)?.status;
      return status === 'failed' || status === 'completed' ? read.result! : undefined;
    }, 30_000);
    expect(done).toMatchObject({ status: 'completed' });
    expect(JSON.stringify(done)).not.toContain('127.0.0.1');
    expect(JSON.stringify(done)).toContain('asked: accept');
  }, 90_000);
});
