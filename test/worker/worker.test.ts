import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import type { TaskStore } from '../../src/store/types.js';
import { Worker, type WorkerOptions } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const AUTH = 'acme/alice';

/** A tool whose runs the test steers: each run waits for `release(n)` or its abort signal. */
function steeredTool() {
  const runs: Array<{ taskId: string | null; signal: AbortSignal; release: () => void; attemptKey: string }> = [];
  const tool = defineTool({
    name: 'steered',
    description: 'waits for the test',
    inputSchema: z.object({ label: z.string().default('x') }),
    execution: { taskSupport: 'required' },
    handler: async (args, ctx) => {
      await new Promise<void>((resolve, reject) => {
        runs.push({ taskId: ctx.taskId, signal: ctx.signal, release: resolve, attemptKey: ctx.idempotencyKey });
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
      });
      return { content: [{ type: 'text', text: `done ${args.label} by run ${runs.length}` }] };
    },
  }) as unknown as TaskTool;
  return { tool, runs };
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

function guardOn(store: TaskStore, clock?: () => number): Guard {
  return openGuard({ store, capabilities: ALL_CAPS, ...(clock ? { clock } : {}), limits: { pollInterval: 100, minTtl: 1 } });
}

function startWorker(guard: Guard, tools: TaskTool[], options: WorkerOptions = {}): Worker {
  const worker = new Worker(guard.worker, new ToolRegistry(tools), { pollMs: 50, ...options });
  worker.start();
  stops.push(() => worker.stop(100));
  return worker;
}

async function admit(guard: Guard, ttl?: number): Promise<string> {
  const out = await createTask(guard, {
    auth: AUTH,
    tool: { name: 'steered', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'steered', arguments: {}, task: ttl === undefined ? {} : { ttl } } },
  });
  return out.record!.taskId;
}

const stored = async (guard: Guard, taskId: string) => (await guard.worker.lookup({ auth: AUTH, taskId })).record;

// Fencing, takeover, cancellation and drain are the store's guarantees as much as the worker's:
// the same cases run on every store.
describe.each(ALL_HARNESSES)('Worker on the $name store', (harness) => {
  async function fresh(label: string): Promise<TaskStore> {
    const store = await harness.open(`worker_${label}`);
    stops.push(() => store.close());
    return store;
  }

  it('claims an admitted task at once (woken by the admission, not the poll) and completes it', async () => {
    const guard = guardOn(await fresh('wake'));
    const { tool, runs } = steeredTool();
    startWorker(guard, [tool], { pollMs: 60_000 });
    const taskId = await admit(guard);
    const run = await until(() => runs[0]);
    expect(run.taskId).toBe(taskId);
    expect(run.attemptKey).toBe(`task:${taskId}`);
    run.release();
    const done = await until(async () => ((await stored(guard, taskId))?.status === 'completed' ? true : undefined));
    expect(done).toBe(true);
    expect(await guard.context.store.pendingDispatch()).toBe(0);
  });

  it.skipIf(harness.name === 'memory')(
    'wakes on another process’s admission and given-back lease through the store’s notifications, not the poll',
    async () => {
      const [mine, theirs] = await harness.openMany('worker_xwake', 2);
      stops.push(
        () => mine!.close(),
        () => theirs!.close(),
      );
      const guard = guardOn(mine!);
      await guard.relay.start();
      stops.push(() => guard.relay.stop());
      const otherProcess = guardOn(theirs!);
      const { tool, runs } = steeredTool();
      startWorker(guard, [tool], { pollMs: 60_000, concurrency: 1 });
      const first = await admit(otherProcess);
      await until(() => runs[0]);
      // A second task, held by a worker of the other process, is given back on its drain.
      const second = await admit(otherProcess);
      const [held] = await otherProcess.worker.claim({ owner: 'theirs', leaseMs: 60_000, limit: 1, maxAttempts: 5, abandonedResult: null });
      expect(held?.taskId).toBe(second);
      runs[0]!.release();
      await until(async () => ((await stored(guard, first))?.status === 'completed' ? true : undefined));
      await new Promise((r) => setTimeout(r, 100));
      expect(runs).toHaveLength(1);
      expect(await otherProcess.worker.release({ fence: { taskId: second, authKey: AUTH, owner: 'theirs', version: held!.version } })).toBe(true);
      const rerun = await until(() => runs[1]);
      expect(rerun.taskId).toBe(second);
      rerun.release();
    },
  );

  it('does not lose an admission that arrives while a claim is in flight (no fallback poll)', async () => {
    const store = await fresh('inflight');
    let release: () => void = () => undefined;
    let gated = true;
    // Every claim returns only after the test lets it: the first one is in flight when the task is admitted.
    const slow = Object.assign(Object.create(store) as TaskStore, {
      claim: async (input: Parameters<TaskStore['claim']>[0]) => {
        const claimed = await store.claim(input);
        if (gated) await new Promise<void>((r) => (release = r));
        return claimed;
      },
    });
    const guard = guardOn(slow);
    const { tool, runs } = steeredTool();
    startWorker(guard, [tool], { pollMs: 60_000 });
    await new Promise((r) => setTimeout(r, 50));
    const taskId = await admit(guard);
    gated = false;
    release();
    const run = await until(() => runs[0]);
    expect(run.taskId).toBe(taskId);
    run.release();
  });

  it('stops a handler whose task was cancelled while its claim was in flight (no heartbeat needed)', async () => {
    const store = await fresh('cancelinflight');
    let guard: Guard | null = null;
    let cancelled = false;
    // The cancellation commits (and its change event fires) after the claim committed and before
    // the worker has the claimed record: no run watches the task yet.
    // The claim from the outbox, not the admission's own (a store that can lease on admission is told not to).
    const racing = Object.assign(Object.create(store) as TaskStore, {
      supports: { ...store.supports, claimsOnAdmit: false },
      claim: async (input: Parameters<TaskStore['claim']>[0]) => {
        const claimed = await store.claim(input);
        for (const record of claimed) {
          const out = await guard!.requestor.cancel({ auth: AUTH, taskId: record.taskId });
          cancelled = out.decision === 'CANCEL_TASK';
        }
        return claimed;
      },
    });
    guard = guardOn(racing);
    const { tool, runs } = steeredTool();
    // Heartbeats (which would also find the cancellation) far beyond the test's wait.
    startWorker(guard, [tool], { pollMs: 60_000, heartbeatMs: 60_000, leaseMs: 180_000 });
    const taskId = await admit(guard);
    const run = await until(() => runs[0]);
    expect(run.taskId).toBe(taskId);
    expect(cancelled).toBe(true);
    await until(() => (run.signal.aborted ? true : undefined));
    expect((await stored(guard, taskId))?.status).toBe('cancelled');
  });

  it('stops a handler from the terminal record its change carried, without reading the task again or writing after it', async () => {
    const store = await fresh('carried');
    const guard = guardOn(store);
    const ended: string[] = [];
    guard.context.events.add({ runEnded: (event) => ended.push(event.outcome) });
    const { tool, runs } = steeredTool();
    startWorker(guard, [tool], { pollMs: 60_000, heartbeatMs: 60_000, leaseMs: 180_000 });
    const taskId = await admit(guard);
    const run = await until(() => runs[0]);
    const lookups: string[] = [];
    const lookup = guard.worker.lookup.bind(guard.worker);
    guard.worker.lookup = async (input) => {
      lookups.push(input.taskId);
      return lookup(input);
    };
    // The cancellation's change carries the cancelled record: the run stops on it alone.
    expect((await guard.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('CANCEL_TASK');
    await until(() => (run.signal.aborted ? true : undefined));
    expect(lookups).toEqual([]);
    guard.worker.lookup = lookup;
    // Its result, offered after the stop, could only be refused by the stored terminal status: the run ends without writing it.
    run.release();
    await until(() => ended[0]);
    expect(ended).toEqual(['cancelled']);
    expect((await store.auditTrail({ taskId })).filter((e) => e.surface === 'transition' && e.decision !== 'APPLY_TRANSITION')).toEqual([]);
    expect((await stored(guard, taskId))?.status).toBe('cancelled');
  });

  it('fences off a worker whose lease was taken over: its handler is stopped and its write refused', async () => {
    const store = await fresh('takeover');
    const guard = guardOn(store);
    const first = steeredTool();
    const second = steeredTool();
    // The first worker never renews (its heartbeat is slower than its lease): like a paused process.
    startWorker(guard, [first.tool], { id: 'slow', leaseMs: 150, heartbeatMs: 10_000, concurrency: 1 });
    const taskId = await admit(guard);
    await until(() => first.runs[0]);
    startWorker(guard, [second.tool], { id: 'fast', leaseMs: 5000 });
    const takeover = await until(() => second.runs[0]);
    expect(takeover.taskId).toBe(taskId);
    const record = await stored(guard, taskId);
    expect(record).toMatchObject({ leaseOwner: 'fast', attempt: 2 });
    // The slow worker wakes up and finishes: its write carries the old version and is refused.
    first.runs[0]!.release();
    await new Promise((r) => setTimeout(r, 50));
    expect((await stored(guard, taskId))?.status).toBe('working');
    takeover.release();
    await until(async () => ((await stored(guard, taskId))?.status === 'completed' ? true : undefined));
    const trail = await store.auditTrail({ taskId });
    const terminal = trail.filter((e) => e.surface === 'transition' && e.status === 'completed');
    expect(terminal.map((e) => e.decision)).toEqual(['APPLY_TRANSITION']);
    expect(trail.some((e) => e.decision === 'BLOCK_STALE_VERSION')).toBe(true);
    expect((await stored(guard, taskId))?.result).toMatchObject({ content: [{ text: 'done x by run 1' }] });
  });

  it('sees a cancellation written by another process within one heartbeat, without change events', async () => {
    const store = await fresh('xcancel');
    const workerSide = guardOn(store);
    const otherProcess = guardOn(store); // its own change feed: the worker hears nothing from it
    const { tool, runs } = steeredTool();
    startWorker(workerSide, [tool], { heartbeatMs: 100 });
    const taskId = await admit(otherProcess);
    const run = await until(() => runs[0]);
    expect((await otherProcess.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('CANCEL_TASK');
    // Nothing but a heartbeat can tell the worker: its lease is far from over and it hears no change.
    await until(() => (run.signal.aborted ? true : undefined));
    expect((await stored(otherProcess, taskId))?.status).toBe('cancelled');
  });

  it('aborts a task when its ttl passes; the expired task cannot be written', async () => {
    const store = await fresh('ttl');
    // The guard's clock stands still until the run has started: however slow the claim, the task
    // is not expired when it is claimed (on a busy machine 200 ms of wall time can pass before
    // it). The run's ttl timer is set from the record, 200 ms after the run starts.
    let now = Date.now();
    const guard = guardOn(store, () => now);
    const { tool, runs } = steeredTool();
    const worker = startWorker(guard, [tool]);
    const taskId = await admit(guard, 200);
    const run = await until(() => runs[0]);
    await until(() => (run.signal.aborted ? true : undefined));
    now += 1000;
    run.release();
    // The run has ended, whatever it tried to write.
    await until(() => (worker.executor.active === 0 ? true : undefined));
    expect((await guard.requestor.read({ auth: AUTH, method: 'tasks/get', taskId })).decision).toBe('BLOCK_EXPIRED');
    expect((await store.auditTrail({ taskId })).filter((e) => e.surface === 'transition' && e.status === 'completed')).toEqual([]);
  });

  it('never starts a cancelled or expired task', async () => {
    const store = await fresh('never');
    const guard = guardOn(store);
    const cancelled = await admit(guard);
    await admit(guard, 1);
    await guard.requestor.cancel({ auth: AUTH, taskId: cancelled });
    await new Promise((r) => setTimeout(r, 5));
    const { tool, runs } = steeredTool();
    startWorker(guard, [tool]);
    await new Promise((r) => setTimeout(r, 200));
    expect(runs).toEqual([]);
    expect(await guard.context.store.pendingDispatch()).toBe(0);
  });

  it('drains on stop: gives unfinished leases back so another worker takes them at once', async () => {
    const store = await fresh('drain');
    const guard = guardOn(store);
    const first = steeredTool();
    const worker = new Worker(guard.worker, new ToolRegistry([first.tool]), { pollMs: 50, leaseMs: 60_000 });
    worker.start();
    const taskId = await admit(guard);
    await until(() => first.runs[0]);
    await worker.stop(50);
    expect(first.runs[0]!.signal.aborted).toBe(true);
    expect(await stored(guard, taskId)).toMatchObject({ status: 'working', leaseOwner: null });
    const second = steeredTool();
    startWorker(guard, [second.tool]);
    const rerun = await until(() => second.runs[0]);
    rerun.release();
    await until(async () => ((await stored(guard, taskId))?.status === 'completed' ? true : undefined));
    expect((await stored(guard, taskId))?.attempt).toBe(2);
  });

  it('after a crash between side effect and completion, the next attempt completes the task once', async () => {
    const store = await fresh('crash');
    const guard = guardOn(store);
    let effects = 0;
    const effectful = defineTool({
      name: 'steered',
      description: 'one side effect per run',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async (_args, ctx) => {
        effects++;
        return { content: [{ type: 'text', text: `effect under ${ctx.idempotencyKey}` }] };
      },
    }) as unknown as TaskTool;
    // The first worker "dies" right before its completion write: it never writes, never renews,
    // and never looks at the outbox again (a dead process claims nothing; with its handler
    // returned its slot is free, and a poll of its own could take the lapsed lease back from
    // the survivor every time, leaving the task with a run that never writes).
    const crashed = new Worker(guard.worker, new ToolRegistry([effectful]), {
      id: 'crashes',
      concurrency: 1,
      leaseMs: 150,
      heartbeatMs: 10_000,
      pollMs: 600_000,
      hooks: { beforeTerminalWrite: () => new Promise<void>(() => undefined) },
    });
    crashed.start();
    const taskId = await admit(guard);
    await until(() => (effects === 1 ? true : undefined));
    startWorker(guard, [effectful], { id: 'survivor' });
    await until(async () => ((await stored(guard, taskId))?.status === 'completed' ? true : undefined));
    expect(effects).toBe(2);
    expect((await stored(guard, taskId))?.result).toMatchObject({ content: [{ text: `effect under task:${taskId}` }] });
    expect((await store.auditTrail({ taskId })).filter((e) => e.status === 'completed' && e.decision === 'APPLY_TRANSITION')).toHaveLength(1);
  });

  it('checkpoint() asks the store at once: a cancellation from another process stops the side effect', async () => {
    const store = await fresh('checkpoint');
    const workerSide = guardOn(store);
    const otherProcess = guardOn(store);
    let proceed = () => {};
    const gate = new Promise<void>((r) => (proceed = r));
    const outcomes: string[] = [];
    const careful = defineTool({
      name: 'steered',
      description: 'checks in before its side effect',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async (_args, ctx) => {
        await gate;
        try {
          await ctx.checkpoint();
          outcomes.push('side effect');
        } catch {
          outcomes.push('stopped');
        }
        return { content: [{ type: 'text', text: 'done' }] };
      },
    }) as unknown as TaskTool;
    // Heartbeats far apart: only the checkpoint can notice the cancellation in time.
    startWorker(workerSide, [careful], { heartbeatMs: 60_000 });
    const taskId = await admit(otherProcess);
    await until(async () => ((await stored(otherProcess, taskId))?.leaseOwner !== null ? true : undefined));
    await otherProcess.requestor.cancel({ auth: AUTH, taskId });
    proceed();
    await until(() => (outcomes.length > 0 ? true : undefined));
    expect(outcomes).toEqual(['stopped']);
    expect((await stored(otherProcess, taskId))?.status).toBe('cancelled');
  });
});
