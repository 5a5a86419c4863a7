import { awaitTaskResult } from '../../src/service/result-wait.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TaskMetrics } from '../../src/metrics/task-metrics.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { cancelTask } from '../../src/runtime/requests/cancel-task.js';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const quick = defineTool({
  name: 'quick',
  description: 'ends at once; fails when asked to',
  inputSchema: z.object({ fail: z.boolean().default(false) }),
  execution: { taskSupport: 'optional' },
  handler: async ({ fail }) => ({ content: [{ type: 'text', text: fail ? 'no' : 'ok' }], isError: fail }),
}) as unknown as TaskTool;
const hold = defineTool({
  name: 'hold',
  description: 'waits until stopped',
  inputSchema: z.object({}),
  execution: { taskSupport: 'required' },
  handler: async (_args, ctx) => {
    await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
    return { content: [] };
  },
}) as unknown as TaskTool;

function setUp(execute = true): { runtime: TaskRuntime; metrics: TaskMetrics; scrape: () => Promise<Map<string, number>> } {
  const runtime = createRuntime({ store: new MemoryStore(), tools: [quick, hold], logger: createLogger('silent'), sweepIntervalMs: 0, execute });
  const metrics = new TaskMetrics(runtime.guard.context, { storeReadIntervalMs: 0, processMetrics: false });
  closers.push(
    () => runtime.close(50),
    () => metrics.close(),
  );
  const scrape = async () => {
    const { body, contentType } = await metrics.render();
    expect(contentType).toMatch(/^text\/plain/);
    const values = new Map<string, number>();
    for (const line of body.split('\n')) {
      const m = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
      if (m !== null) values.set(m[1]!, Number(m[2]));
    }
    return values;
  };
  return { runtime, metrics, scrape };
}

async function call(runtime: TaskRuntime, auth: string, name: string, args: Record<string, unknown> = {}, key?: string) {
  return createTask(runtime.guard, {
    auth,
    tool: { name, execution: { taskSupport: name === 'hold' ? 'required' : 'optional' } },
    request: {
      method: 'tools/call',
      params: { name, arguments: args, task: {}, ...(key === undefined ? {} : { _meta: { 'io.tasklatch/idempotency-key': key } }) },
    },
  });
}

describe('TaskMetrics', () => {
  it('counts the decisions, task ends, claims and runs of the work done, and reads the task gauges from the store', async () => {
    const { runtime, scrape } = setUp();
    await runtime.start();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await call(runtime, 'acme/alice', 'quick')).record!.taskId);
    ids.push((await call(runtime, 'beta/bob', 'quick', { fail: true }, 'k1')).record!.taskId);
    expect((await call(runtime, 'beta/bob', 'quick', { fail: true }, 'k1')).decision).toBe('REPLAY_TASK');
    expect((await call(runtime, 'beta/bob', 'quick', { fail: false }, 'k1')).decision).toBe('BLOCK_IDEMPOTENCY_COLLISION');
    const held = (await call(runtime, 'acme/alice', 'hold')).record!.taskId;
    for (const id of ids)
      await until(async () => ((await runtime.guard.context.store.inspectTask({ taskId: id }))?.record.status !== 'working' ? true : undefined));
    await until(() => (runtime.worker?.executor.active === 1 ? true : undefined));
    // Another principal asks for alice's task: a refusal.
    expect((await runtime.guard.requestor.read({ auth: 'beta/bob', method: 'tasks/get', taskId: held })).decision).toBe('BLOCK_AUTH');
    expect((await cancelTask(runtime, { auth: 'acme/alice', taskId: held })).kind).toBe('cancelled');
    await until(() => (runtime.worker?.executor.active === 0 ? true : undefined));

    const m = await scrape();
    expect(m.get('tasklatch_admissions_total{tool="quick",decision="ACCEPT_TASK"}')).toBe(4);
    expect(m.get('tasklatch_admissions_total{tool="quick",decision="REPLAY_TASK"}')).toBe(1);
    expect(m.get('tasklatch_admissions_total{tool="quick",decision="BLOCK_IDEMPOTENCY_COLLISION"}')).toBe(1);
    expect(m.get('tasklatch_admissions_total{tool="hold",decision="ACCEPT_TASK"}')).toBe(1);
    expect(m.get('tasklatch_decisions_total{surface="read",decision="BLOCK_AUTH"}')).toBe(1);
    expect(m.get('tasklatch_decisions_total{surface="read",decision="CANCEL_TASK"}')).toBe(1);
    // Five claims and four terminal writes, each an applied transition.
    expect(m.get('tasklatch_decisions_total{surface="transition",decision="APPLY_TRANSITION"}')).toBe(9);
    expect(m.get('tasklatch_tasks_ended_total{tool="quick",status="completed"}')).toBe(3);
    expect(m.get('tasklatch_tasks_ended_total{tool="quick",status="failed"}')).toBe(1);
    expect(m.get('tasklatch_tasks_ended_total{tool="hold",status="cancelled"}')).toBe(1);
    expect(m.get('tasklatch_claims_total')).toBe(5);
    expect(m.get('tasklatch_lease_takeovers_total')).toBe(0);
    expect(m.get('tasklatch_claim_latency_seconds_count')).toBe(5);
    expect(m.get('tasklatch_run_duration_seconds_count{tool="quick",outcome="completed"}')).toBe(3);
    expect(m.get('tasklatch_run_duration_seconds_count{tool="quick",outcome="failed"}')).toBe(1);
    expect(m.get('tasklatch_run_duration_seconds_count{tool="hold",outcome="cancelled"}')).toBe(1);
    expect(m.get('tasklatch_tasks{status="completed"}')).toBe(3);
    expect(m.get('tasklatch_tasks{status="failed"}')).toBe(1);
    expect(m.get('tasklatch_tasks{status="cancelled"}')).toBe(1);
    expect(m.get('tasklatch_tasks{status="working"}')).toBe(0);
    expect(m.get('tasklatch_outbox_open')).toBe(0);
    expect(m.get('tasklatch_results_waiting')).toBe(0);
    expect((m.get('tasklatch_store_latency_seconds_count{operation="admit"}') ?? 0) >= 6).toBe(true);
  });

  it('counts a heartbeat that finds its lease taken over as lost', async () => {
    const store = new MemoryStore();
    const runtime = createRuntime({ store, tools: [hold], logger: createLogger('silent'), sweepIntervalMs: 0, worker: { leaseMs: 10_000, heartbeatMs: 30 } });
    const metrics = new TaskMetrics(runtime.guard.context, { storeReadIntervalMs: 0, processMetrics: false });
    closers.push(
      () => runtime.close(50),
      () => metrics.close(),
    );
    await runtime.start();
    const id = (await call(runtime, 'acme/alice', 'hold')).record!.taskId;
    await until(() => (runtime.worker?.executor.active === 1 ? true : undefined));
    // Another process whose clock is past the lease takes the task: the fence moves.
    const later = openGuard({ store, capabilities: { cancel: {} }, clock: () => Date.now() + 60_000 });
    expect((await later.worker.claim({ owner: 'other', leaseMs: 60_000, limit: 1, maxAttempts: 5, abandonedResult: null })).map((r) => r.taskId)).toEqual([id]);
    await until(() => (runtime.worker?.executor.active === 0 ? true : undefined));
    const body = (await metrics.render()).body;
    expect(body).toMatch(/^tasklatch_heartbeat_failures_total\{reason="lost"\} 1$/m);
    expect(body).toMatch(/^tasklatch_run_duration_seconds_count\{tool="hold",outcome="lease lost"\} 1$/m);
  });

  it('counts takeovers and abandoned tasks, and the result requests held open', async () => {
    const { runtime, scrape } = setUp(false);
    const id = (await call(runtime, 'acme/alice', 'hold')).record!.taskId;
    await scrape();
    const claim = () => runtime.guard.worker.claim({ owner: 'w', leaseMs: 1, limit: 1, maxAttempts: 2, abandonedResult: { content: [], isError: true } });
    expect(await claim()).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 5));
    expect(await claim()).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 5));
    expect(await claim()).toHaveLength(0);
    expect((await runtime.guard.context.store.inspectTask({ taskId: id }))?.record.status).toBe('failed');
    const other = (await call(runtime, 'acme/alice', 'hold')).record!.taskId;
    const stop = new AbortController();
    const waiting = awaitTaskResult(runtime.guard, { auth: 'acme/alice', taskId: other, signal: stop.signal });
    await until(async () => ((await scrape()).get('tasklatch_results_waiting') === 1 ? true : undefined));
    stop.abort();
    await waiting;
    const m = await scrape();
    expect(m.get('tasklatch_claims_total')).toBe(2);
    expect(m.get('tasklatch_lease_takeovers_total')).toBe(1);
    expect(m.get('tasklatch_claim_latency_seconds_count')).toBe(1);
    expect(m.get('tasklatch_tasks_abandoned_total')).toBe(1);
    expect(m.get('tasklatch_results_waiting')).toBe(0);
    expect(m.get('tasklatch_tasks{status="working"}')).toBe(1);
  });
});
