import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TasklatchError } from '../../src/core/errors.js';
import { openGuard } from '../../src/service/guard.js';
import type { TaskStore } from '../../src/store/types.js';
import { StepFailedError } from '../../src/tools/step.js';
import { defineTool, type TaskTool, type ToolResult } from '../../src/tools/tool.js';
import { plainStep } from '../../src/tools/plain-step.js';
import { ALL_CAPS } from '../support/records.js';
import { memoryHarness, postgresHarness } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

/** A child tool: `n` squared, in structuredContent; `fail: true` ends it failed; `hold` waits for its signal. */
function square(gate?: { hold: Promise<void> }): TaskTool {
  return defineTool({
    name: 'square',
    description: 'squares n',
    inputSchema: z.object({ n: z.number(), fail: z.boolean().optional() }),
    execution: { taskSupport: 'required' },
    handler: async ({ n, fail }, ctx) => {
      if (gate !== undefined) {
        await Promise.race([gate.hold, new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))))]);
      }
      if (fail === true) return { content: [{ type: 'text', text: `no square for ${n}` }], isError: true };
      return { content: [{ type: 'text', text: String(n * n) }], structuredContent: { value: n * n } };
    },
  });
}

/** The parent: fans out to `count` squares and sums them. */
function fanOut(count = 5, options: { failAt?: number } = {}): TaskTool {
  return stepTool('fan-out', async (_args, ctx) => {
    const children = Array.from({ length: count }, (_, i) =>
      ctx.step.runTool(`square-${i + 1}`, 'square', { n: i + 1, ...(options.failAt === i + 1 ? { fail: true } : {}) }),
    );
    const results = await Promise.all(children);
    const sum = results.reduce((total, r) => total + (r.structuredContent!.value as number), 0);
    return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } } satisfies ToolResult;
  });
}

const children = (store: TaskStore, parent: string) => store.childTasks({ authKey: AUTH, taskId: parent });

describe.each([memoryHarness, postgresHarness])('child tasks on the $name store', (harness) => {
  async function world(label: string): Promise<StepWorld> {
    const w = await stepWorld(harness, `children_${label}`);
    worlds.push(w);
    return w;
  }

  it('fans out to 5 children and in: the sum, with one worker slot (the waiting parent holds none)', async () => {
    const w = await world('fan');
    const worker = w.worker([fanOut(), square()], { concurrency: 1 });
    const parent = await w.admit('fan-out');
    const done = await w.settled(parent);
    expect(resultText(done)).toBe('55');
    expect(done.status).toBe('completed');
    const kids = await children(w.store, parent);
    expect(kids).toHaveLength(5);
    expect(kids.every((k) => k.status === 'completed' && k.parentTaskId === parent)).toBe(true);
    // The journal: five child rows, completed with their results, all concurrent.
    const rows = await w.svc.worker.lookupSteps({ auth: AUTH, taskId: parent });
    expect(rows.map((r) => [r.kind, r.status, r.concurrent])).toEqual(Array(5).fill(['child', 'completed', true]));
    // The requestor's list shows the parent only; a child is still read by id.
    const listed = await w.svc.requestor.list({ auth: AUTH });
    expect(listed.records!.map((r) => r.taskId)).toEqual([parent]);
    expect((await w.svc.requestor.read({ auth: AUTH, method: 'tasks/get', taskId: kids[0]!.taskId })).record?.taskId).toBe(kids[0]!.taskId);
    // Seen completed once its write commits, the parent's run ends when it hears the commit back.
    await until(() => (worker.executor.active === 0 ? true : undefined));
  });

  it('a parent waiting on its children holds no slot: a one-slot worker runs them while it waits', async () => {
    const w = await world('slot');
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const worker = w.worker([fanOut(2), square({ hold })], { concurrency: 3 });
    const parent = await w.admit('fan-out');
    await until(async () => {
      const r = await w.record(parent);
      return r?.statusMessage?.startsWith('waiting for child tasks') === true && r.leaseOwner === null ? r : undefined;
    });
    // Two children run, the parent does not: two slots busy of three.
    await until(() => (worker.executor.active === 2 ? true : undefined));
    release();
    expect(resultText(await w.settled(parent))).toBe('5');
  });

  it('a run killed after starting its children and run again starts no second child', async () => {
    const w = await world('kill');
    // The first worker's child rows never land (its store is gone at that write, until its lease runs out): the children exist, the journal does not say so.
    const stuck = new Proxy(w.store, {
      get(target, prop, receiver) {
        if (prop === 'recordStep')
          return (input: Parameters<TaskStore['recordStep']>[0]) =>
            input.step.kind === 'child' ? Promise.reject(new TasklatchError('STORE_UNAVAILABLE', 'connection lost')) : target.recordStep(input);
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const dying = openGuard({ store: stuck, capabilities: ALL_CAPS, limits: { pollInterval: 100 } });
    const first = w.worker([fanOut(), square()], { on: dying, leaseMs: 500 });
    const parent = await w.admit('fan-out');
    await until(async () => ((await children(w.store, parent)).length === 5 ? true : undefined));
    await first.stop(10);
    // Another worker takes the task once the lease has run out, and runs it to the end.
    w.worker([fanOut(), square()]);
    expect(resultText(await w.settled(parent, 'completed'))).toBe('55');
    const kids = await children(w.store, parent);
    expect(kids).toHaveLength(5);
    expect(new Set(kids.map((k) => k.idempotencyKey)).size).toBe(5);
  });

  it('a failing child throws StepFailedError in its parent', async () => {
    const w = await world('fail');
    w.worker([
      stepTool('careful', async (_args, ctx) => {
        try {
          await ctx.step.runTool('bad', 'square', { n: 3, fail: true });
          return text('no error');
        } catch (error) {
          return text(`${error instanceof StepFailedError ? 'StepFailedError' : 'other'}: ${(error as Error).message}`);
        }
      }),
      square(),
    ]);
    const parent = await w.admit('careful');
    const done = await w.settled(parent, 'completed');
    expect(resultText(done)).toMatch(/^StepFailedError: child task .* \(square\) failed: no square for 3$/);
    const [row] = await w.svc.worker.lookupSteps({ auth: AUTH, taskId: parent });
    expect(row).toMatchObject({ kind: 'child', status: 'failed' });
  });

  it('cancelling the parent cancels its running children', async () => {
    const w = await world('cancel');
    const hold = new Promise<void>(() => undefined);
    w.worker([fanOut(3), square({ hold })], { concurrency: 5 });
    const parent = await w.admit('fan-out');
    await until(async () => {
      const r = await w.record(parent);
      return r?.statusMessage?.startsWith('waiting for child tasks') === true ? r : undefined;
    });
    expect((await w.svc.requestor.cancel({ auth: AUTH, taskId: parent })).decision).toBe('CANCEL_TASK');
    const kids = await children(w.store, parent);
    expect(kids.map((k) => k.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
  });

  it('refuses an unknown tool and bad arguments as a failed step, starting nothing', async () => {
    const w = await world('refuse');
    w.worker([
      stepTool('wrong', async (_args, ctx) => {
        const seen: string[] = [];
        for (const [name, tool, args] of [
          ['a', 'nope', {}],
          ['b', 'square', { n: 'x' }],
        ] as const) {
          await ctx.step.runTool(name, tool, args).catch((e: Error) => seen.push(`${e.name}: ${e.message}`));
        }
        return text(seen.join(' | '));
      }),
      square(),
    ]);
    const parent = await w.admit('wrong');
    const out = resultText(await w.settled(parent, 'completed'));
    expect(out).toMatch(/^StepFailedError: step "a": unknown tool "nope".* \| StepFailedError: step "b": /);
    expect(await children(w.store, parent)).toEqual([]);
  });
});

describe('runTool in a plain call', () => {
  it('throws a clear error: only a task has children', async () => {
    const step = plainStep(new AbortController().signal, 'call-1');
    await expect(step.runTool('c', 'square', { n: 1 })).rejects.toThrow(/runTool starts a child task, and this call is not a task/);
  });
});
