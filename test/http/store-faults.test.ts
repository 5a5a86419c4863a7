import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FAULT_TEXT, StoreFaults } from '../support/store-faults.js';
import { sdkClient } from '../support/sdk-http.js';
import { collectEvents, listen, readEvents, rpc, startListen } from '../support/stateless.js';
import { until } from '../support/until.js';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// A store fault at each call a requestor's request makes (a listen's visibility read, tasks/get,
// a held tasks/result's reads, tasks/list, tasks/update), on both wires and both SQL stores,
// injected by a wrapper of the real store: within the ride-through bound the request waits and
// answers as if nothing happened; past it (the bound set to 0 here) the answer is the retryable
// -32001 Store unavailable (503 + Retry-After on 2026-07-28), never "not found", never an
// acknowledgement without the caller's ids, never the store's text.

const UNAVAILABLE = { code: -32001, message: 'Store unavailable: retry later', data: { retryAfterMs: 2000 } };
const HOLD = { name: 'hold', arguments: {}, task: { ttl: 60_000 } };
const EXPORT = { name: 'export_ledger', arguments: { month: '2026-06', rows: 3 }, task: { ttl: 60_000 } };

let wire: WireServer | undefined;
let session: Client | undefined;
afterEach(async () => {
  await session?.close();
  await wire?.close();
  session = undefined;
  wire = undefined;
});

async function legacyError(work: Promise<unknown>): Promise<McpError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe.each([sqliteHarness, postgresHarness])('store faults toward a requestor on the $name store', (harness) => {
  /** `execute`: a worker runs the tasks (else they stay working, and the server closes at once). */
  async function setup(label: string, execute = false) {
    const faults = new StoreFaults();
    wire = await startWireServer(faults.wrap(await harness.open(`requestor_faults_${label}`)), { limits: { pollInterval: 100 }, execute });
    session = await sdkClient(wire.http.url, 'token-alice');
    const { limits } = wire.server.runtime.guard.context;
    /** The ride-through bound of this server, set per step of a test. */
    const bound = (ms: number) => (limits.storeOutageMs = ms);
    return { faults, url: wire.http.url, client: session, bound };
  }

  it('subscriptions/listen: 503 past the bound, never an empty acknowledgement; rides through a shorter fault', async () => {
    const { faults, url, bound } = await setup('listen');
    const taskId = (await rpc(url, 'tools/call', HOLD, { token: 'token-alice' })).result!.taskId as string;

    bound(0);
    faults.arm('visibleTaskIds');
    const refused = await listen(url, 'token-alice', [taskId], 'down');
    expect(refused.res.status).toBe(503);
    expect(refused.res.headers.get('retry-after')).toBe('2');
    const body = (await refused.res.json()) as { id: unknown; error: unknown };
    expect(body).toEqual({ jsonrpc: '2.0', id: 'down', error: UNAVAILABLE });

    bound(30_000);
    faults.arm('visibleTaskIds', 2);
    const held = await listen(url, 'token-alice', [taskId], 'rides');
    expect(held.res.status).toBe(200);
    const events = await readEvents(held.res, held.abort, (m) => m.some((e) => e.method === 'notifications/tasks'));
    expect(events[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
    expect(events[1]).toMatchObject({ method: 'notifications/tasks', params: { taskId, status: 'working' } });
    expect(faults.count('visibleTaskIds')).toBe(3);
  });

  it('a subscription whose read fails past the bound ends with -32001 as the listen response, never silence', async () => {
    const { faults, url, bound } = await setup('listen_stream');
    const taskId = (await rpc(url, 'tools/call', HOLD, { token: 'token-alice' })).result!.taskId as string;
    const listening = startListen(url, 'token-alice', [taskId], 'stream');
    const stream = collectEvents(listening.response);
    // The stream has sent the task's state: the read under test is the next one.
    await until(() => (stream.messages.length >= 2 ? true : undefined), 10_000);
    bound(0);
    faults.arm('get');
    // A change heard from another process (no record with it): the stream reads the task.
    wire!.server.runtime.guard.context.changes.publish(taskId);
    await stream.ended;
    expect(stream.messages.map((m) => m.method ?? 'response')).toEqual(['notifications/subscriptions/acknowledged', 'notifications/tasks', 'response']);
    expect(stream.messages.at(-1)).toEqual({ jsonrpc: '2.0', id: 'stream', error: UNAVAILABLE });
    expect(faults.count('get')).toBe(1);
  });

  it('tasks/get on 2026-07-28 and tasks/list on 2025-11-25: -32001 past the bound, the answer within it', async () => {
    const { faults, url, client, bound } = await setup('reads');
    const taskId = (await client.request({ method: 'tools/call', params: HOLD }, CreateTaskResultSchema)).task.taskId;

    bound(0);
    faults.arm('get');
    const got = await rpc(url, 'tasks/get', { taskId }, { token: 'token-alice' });
    expect([got.status, got.error]).toEqual([503, UNAVAILABLE]);
    expect((await legacyError(client.experimental.tasks.getTask(taskId))).code).toBe(-32001);
    faults.arm('list');
    const listed = await legacyError(client.experimental.tasks.listTasks());
    expect([listed.code, listed.data]).toEqual([-32001, { retryAfterMs: 2000 }]);
    expect(listed.message).not.toContain(FAULT_TEXT);

    faults.heal();
    bound(30_000);
    faults.arm('get', 2);
    expect((await rpc(url, 'tasks/get', { taskId }, { token: 'token-alice' })).result).toMatchObject({ taskId, status: 'working' });
    faults.arm('list', 2);
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(taskId);
    expect(faults.count('get')).toBe(4);
    expect(faults.count('list')).toBe(3);
  });

  it('a held tasks/result waits through a fault shorter than the bound and returns the result; past the bound, -32001', async () => {
    const { faults, client, bound } = await setup('result', true);
    const first = (await client.request({ method: 'tools/call', params: EXPORT }, CreateTaskResultSchema)).task.taskId;

    bound(30_000);
    faults.arm('get');
    const result = client.experimental.tasks.getTaskResult(first, CallToolResultSchema);
    // The wait met the fault twice (it reads again and again): then the store is back.
    await faults.hit('get', 2);
    faults.heal();
    expect(await result).toMatchObject({ structuredContent: { rows: 3 } });

    bound(0);
    faults.arm('get');
    const second = (await client.request({ method: 'tools/call', params: EXPORT }, CreateTaskResultSchema)).task.taskId;
    const refused = await legacyError(client.experimental.tasks.getTaskResult(second, CallToolResultSchema));
    expect([refused.code, refused.data]).toEqual([-32001, { retryAfterMs: 2000 }]);
    faults.heal();
    expect(await client.experimental.tasks.getTaskResult(second, CallToolResultSchema)).toMatchObject({ structuredContent: { rows: 3 } });
  });

  it('tasks/update whose store read fails is 503 Store unavailable, and changes nothing', async () => {
    const { faults, url } = await setup('update');
    const taskId = (await rpc(url, 'tools/call', HOLD, { token: 'token-alice' })).result!.taskId as string;
    faults.arm('inputs');
    const update = await rpc(url, 'tasks/update', { taskId, inputResponses: { ship: { action: 'accept' } } }, { token: 'token-alice' });
    expect([update.status, update.error]).toEqual([503, UNAVAILABLE]);
    faults.heal();
    expect((await rpc(url, 'tasks/get', { taskId }, { token: 'token-alice' })).result).toMatchObject({ taskId, status: 'working' });
  });
});
