import { afterEach, describe, expect, it } from 'vitest';
import { parkDelay } from '../../src/core/park-rules.js';
import type { TaskRecord } from '../../src/core/types.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import type { TaskStore } from '../../src/store/types.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import type { TaskTool, ToolContext } from '../../src/tools/tool.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { Worker } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { AUTH, ELICIT, resultText, stepTool, text } from '../support/steps.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { until } from '../support/until.js';

// A deploy changes a handler under tasks in flight: the run that meets the journal's other order
// parks its task (working, saying why, due again after a backoff) instead of failing it, and code
// that agrees with the journal finishes it. The clock is the test's: no wait is a wall wait.

const TOOL = 'deploy_demo';
const SLEEP_MS = 60_000;

/** Version 1: step `a`, sleep `wait`, step `b`. */
function v1(runs: string[]): TaskTool {
  return stepTool(TOOL, async (_args, ctx) => {
    await ctx.step.do('a', () => runs.push('a'));
    await ctx.step.sleep('wait', SLEEP_MS);
    await ctx.step.do('b', () => runs.push('b'));
    return text('done by v1');
  });
}

/** Version 2: adds step `a2` after `a` with no gate: the journal of a v1 task has the sleep there. */
function v2(runs: string[], extra: Partial<TaskTool> = {}): TaskTool {
  const handler = async (ctx: ToolContext) => {
    await ctx.step.do('a', () => runs.push('a'));
    await ctx.step.do('a2', () => runs.push('a2'));
    await ctx.step.sleep('wait', SLEEP_MS);
    await ctx.step.do('b', () => runs.push('b'));
    return text('done by v2');
  };
  return Object.assign(
    stepTool(TOOL, (_args, ctx) => handler(ctx)),
    extra,
  );
}

interface World {
  svc: Guard;
  store: TaskStore;
  clock: { now: number };
  start(tool: TaskTool): Worker;
  stop(worker: Worker): Promise<void>;
  admit(): Promise<string>;
  record(taskId: string): Promise<TaskRecord>;
  when(taskId: string, test: (r: TaskRecord) => boolean): Promise<TaskRecord>;
  close(): Promise<void>;
}

const worlds: World[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.close();
});

describe.each(ALL_HARNESSES)('a journal mismatch parks on the $name store', (harness) => {
  async function world(label: string): Promise<World> {
    const store = await harness.open(`park_${label}`);
    const clock = { now: Date.now() };
    const svc = openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100 }, clock: () => clock.now });
    const workers = new Set<Worker>();
    const w: World = {
      svc,
      store,
      clock,
      start: (tool) => {
        const worker = new Worker(svc.worker, new ToolRegistry([tool]), { pollMs: 20, leaseMs: 5_000 });
        worker.start();
        workers.add(worker);
        return worker;
      },
      stop: async (worker) => {
        workers.delete(worker);
        await worker.stop(100);
      },
      admit: async () => {
        const out = await createTask(svc, {
          auth: AUTH,
          tool: { name: TOOL, execution: { taskSupport: 'required' } },
          request: { method: 'tools/call', params: { name: TOOL, arguments: {}, task: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': ELICIT } } },
        });
        return out.record!.taskId;
      },
      record: async (taskId) => (await svc.worker.lookup({ auth: AUTH, taskId })).record!,
      when: (taskId, test) =>
        until(async () => {
          const r = (await svc.worker.lookup({ auth: AUTH, taskId })).record;
          return r !== null && test(r) ? r : undefined;
        }),
      close: async () => {
        await Promise.all([...workers].map((worker) => worker.stop(100)));
        await store.close();
      },
    };
    worlds.push(w);
    return w;
  }

  const asleep = (r: TaskRecord) => r.statusMessage?.startsWith('sleeping') === true && r.leaseOwner === null;
  const parked = (r: TaskRecord) => r.statusMessage?.startsWith('parked:') === true && r.leaseOwner === null;

  /** A v1 task asleep after `a`, its v1 worker gone, and the clock past its wake time. */
  async function sleepingV1Task(w: World, runs: string[]): Promise<string> {
    const old = w.start(v1(runs));
    const taskId = await w.admit();
    await w.when(taskId, asleep);
    await w.stop(old);
    w.clock.now += SLEEP_MS + 1;
    return taskId;
  }

  it('v2 meets a v1 journal: the task stays working, parked, saying where and what; v1 then finishes it', async () => {
    const w = await world('roundtrip');
    const runs: string[] = [];
    const taskId = await sleepingV1Task(w, runs);
    const tool = v2(runs);
    const own = new ToolRegistry([tool]).version(TOOL)!;
    const incompatible = w.start(tool);
    const stuck = await w.when(taskId, parked);
    // The code that met the mismatch, and the task's own version where it was admitted with another.
    const version = stuck.toolVersion === null || stuck.toolVersion === own ? own : `${own}, admitted as ${stuck.toolVersion}`;
    await w.stop(incompatible);
    expect(stuck.status).toBe('working');
    expect(stuck.statusMessage).toMatch(
      new RegExp(
        `^parked: step order changed at position 1: the journal has sleep "wait" and this run asked for step "a2" \\(version ${version}\\); retrying at `,
      ),
    );
    // Nothing of v2 ran: `a` replayed, `a2` never reached its function.
    expect(runs).toEqual(['a']);
    const seen = await w.store.inspectTask({ taskId });
    expect(seen?.parked).toEqual({ parkedAt: w.clock.now, parks: 1 });
    expect(seen?.dispatch?.availableAt).toBe(w.clock.now + parkDelay(1));
    expect(await w.store.parkedTasks({ now: w.clock.now })).toEqual([{ app: stuck.app, tool: TOOL, count: 1 }]);
    expect((await w.store.findTasks({ filter: { parked: true }, after: null, limit: 5 })).records.map((r) => r.taskId)).toEqual([taskId]);

    // Rolled back: a v1 worker takes it once it is due again, and finishes it.
    w.clock.now += parkDelay(1);
    w.start(v1(runs));
    const done = await w.when(taskId, (r) => r.status === 'completed');
    expect(resultText(done)).toBe('done by v1');
    expect(done.statusMessage).toBeNull();
    expect(runs).toEqual(['a', 'b']);
    expect((await w.store.inspectTask({ taskId }))?.parked).toBeNull();
    expect(await w.store.parkedTasks({ now: w.clock.now })).toEqual([]);
  });

  it('parks again with a longer wait while only v2 runs, and the mark goes once a run gets past the point', async () => {
    const w = await world('again');
    const runs: string[] = [];
    const taskId = await sleepingV1Task(w, runs);
    const incompatible = w.start(v2(runs));
    const first = await w.when(taskId, parked);
    w.clock.now += parkDelay(1);
    const second = await w.when(taskId, (r) => parked(r) && r.version > first.version);
    await w.stop(incompatible);
    expect((await w.store.inspectTask({ taskId }))?.parked?.parks).toBe(2);
    expect((await w.store.inspectTask({ taskId }))?.dispatch?.availableAt).toBe(w.clock.now + parkDelay(2));
    expect(second.statusMessage).not.toBe(first.statusMessage);
    w.clock.now += parkDelay(2);
    w.start(v1(runs));
    expect((await w.when(taskId, (r) => r.status === 'completed')).statusMessage).toBeNull();
  });

  it('a parked task is cancelled as usual, and its message goes with it', async () => {
    const w = await world('cancel');
    const runs: string[] = [];
    const taskId = await sleepingV1Task(w, runs);
    w.start(v2(runs));
    await w.when(taskId, parked);
    expect((await w.svc.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('CANCEL_TASK');
    const cancelled = await w.record(taskId);
    expect(cancelled).toMatchObject({ status: 'cancelled', statusMessage: null });
    expect((await w.store.inspectTask({ taskId }))?.parked).toBeNull();
  });

  it("a tool with onJournalMismatch: 'fail' ends the task failed with the order error, as before", async () => {
    const w = await world('fail');
    const runs: string[] = [];
    const taskId = await sleepingV1Task(w, runs);
    w.start(v2(runs, { onJournalMismatch: 'fail' }));
    const failed = await w.when(taskId, (r) => r.status === 'failed');
    expect(resultText(failed)).toBe('step order changed at position 1: the journal has sleep "wait" and this run asked for step "a2"');
    expect(failed.statusMessage).toBeNull();
    expect((await w.store.inspectTask({ taskId }))?.parked).toBeNull();
  });

  it('a task cancelled while it sleeps ends without the sleep’s message', async () => {
    const w = await world('cancel-sleep');
    const old = w.start(v1([]));
    const taskId = await w.admit();
    await w.when(taskId, asleep);
    await w.stop(old);
    expect((await w.svc.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('CANCEL_TASK');
    expect(await w.record(taskId)).toMatchObject({ status: 'cancelled', statusMessage: null });
  });
});

describe('onJournalMismatch', () => {
  it('refuses a value other than park or fail', () => {
    expect(() => new ToolRegistry([v2([], { onJournalMismatch: 'retry' as never })])).toThrow(/onJournalMismatch is 'park' or 'fail'/);
  });
});
