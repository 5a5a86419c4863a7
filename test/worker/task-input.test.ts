import { awaitTaskResult } from '../../src/service/result-wait.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ExpirySweeper } from '../../src/service/expiry-sweeper.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import type { TaskStore } from '../../src/store/types.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { Worker } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const AUTH = 'acme/alice';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const ELICIT = { elicitation: {} };

/** A tool that asks twice (two asks, the second with two questions), counting its runs and side effects. */
function askingTool(opts: { differentOnRerun?: boolean } = {}) {
  const seen = { runs: 0, effects: 0 };
  const tool = defineTool({
    name: 'approve',
    description: 'asks, then acts',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    handler: async (_args, ctx) => {
      seen.runs++;
      const first = await ctx.elicit(
        { message: opts.differentOnRerun && seen.runs > 1 ? 'Something else?' : 'Approve?', requestedSchema: { type: 'object' } },
        { key: 'approve' },
      );
      const more = await ctx.ask({
        who: { method: 'elicitation/create', params: { message: 'Who?', requestedSchema: { type: 'object' } } },
        why: { method: 'elicitation/create', params: { message: 'Why?', requestedSchema: { type: 'object' } } },
      });
      seen.effects++;
      return { content: [{ type: 'text', text: `${first.action} by ${JSON.stringify(more)}` }] };
    },
  }) as unknown as TaskTool;
  return { tool, seen };
}

describe.each(ALL_HARNESSES)('durable input on the $name store', (harness) => {
  async function fresh(label: string, count = 1): Promise<TaskStore[]> {
    const stores = await harness.openMany(`input_${label}`, count);
    for (const store of new Set(stores)) stops.push(() => store.close());
    return stores;
  }

  function guardOn(store: TaskStore): Guard {
    return openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100 } });
  }

  function worker(svc: Guard, tool: TaskTool, id: string): Worker {
    const w = new Worker(svc.worker, new ToolRegistry([tool]), { id, pollMs: 50, leaseMs: 2000 });
    w.start();
    stops.push(() => w.stop(100));
    return w;
  }

  async function admit(svc: Guard, capabilities: Record<string, unknown> = ELICIT): Promise<string> {
    const out = await createTask(svc, {
      auth: AUTH,
      tool: { name: 'approve', execution: { taskSupport: 'required' } },
      request: {
        method: 'tools/call',
        params: { name: 'approve', arguments: {}, task: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': capabilities } },
      },
    });
    return out.record!.taskId;
  }

  const status = async (svc: Guard, taskId: string) => (await svc.worker.lookup({ auth: AUTH, taskId })).record?.status;
  const outstanding = async (svc: Guard, taskId: string) =>
    (await svc.answers.lookupInputs({ auth: AUTH, taskId })).filter((q) => q.answeredAt === null).map((q) => q.key);

  it('waits without a worker, resumes from the stored answers, never asks twice, acts once', async () => {
    const [store] = await fresh('resume');
    const svc = guardOn(store!);
    const { tool, seen } = askingTool();
    const w = worker(svc, tool, 'w1');
    const taskId = await admit(svc);
    await until(async () => ((await status(svc, taskId)) === 'input_required' ? true : undefined));
    expect(await outstanding(svc, taskId)).toEqual(['approve']);
    await until(() => (w.executor.active === 0 ? true : undefined));
    expect((await svc.answers.answer({ auth: AUTH, taskId, responses: { approve: { action: 'accept' } } })).decision).toBe('APPLY_ANSWER');
    await until(async () => ((await outstanding(svc, taskId)).length === 2 ? true : undefined));
    expect(await outstanding(svc, taskId)).toEqual(['who', 'why']);
    // A partial answer leaves the task waiting for the rest.
    await svc.answers.answer({ auth: AUTH, taskId, responses: { who: { action: 'accept', content: { n: 'ada' } } } });
    expect(await status(svc, taskId)).toBe('input_required');
    await svc.answers.answer({ auth: AUTH, taskId, responses: { why: { action: 'accept', content: { n: 'audit' } } } });
    await until(async () => ((await status(svc, taskId)) === 'completed' ? true : undefined));
    expect(seen).toEqual({ runs: 3, effects: 1 });
    const asks = (await store!.auditTrail({ taskId })).filter((e) => e.decision === 'APPLY_ASK');
    expect(asks.map((e) => e.detail)).toEqual(['ask approve', 'ask who,why']);
  });

  it('resumes on another worker after the one that asked is gone, with the answer sent through another handle', async () => {
    const [mine, theirs] = await fresh('takeover', 2);
    const asker = guardOn(mine!);
    const other = guardOn(theirs!);
    const first = askingTool();
    const w1 = worker(asker, first.tool, 'asker');
    const taskId = await admit(asker);
    await until(async () => ((await status(asker, taskId)) === 'input_required' ? true : undefined));
    await w1.stop(50);
    const second = askingTool();
    await other.relay.start();
    stops.push(() => other.relay.stop());
    worker(other, second.tool, 'survivor');
    await other.answers.answer({ auth: AUTH, taskId, responses: { approve: { action: 'accept' } } });
    await until(async () => ((await outstanding(other, taskId)).length === 2 ? true : undefined));
    await asker.answers.answer({ auth: AUTH, taskId, responses: { who: { action: 'accept' }, why: { action: 'decline' } } });
    await until(async () => ((await status(other, taskId)) === 'completed' ? true : undefined));
    expect(first.seen.effects + second.seen.effects).toBe(1);
  });

  it('refuses hostile answers: another tenant, a different second answer, an unknown key, after cancel', async () => {
    const [store] = await fresh('hostile');
    const svc = guardOn(store!);
    worker(svc, askingTool().tool, 'w1');
    const taskId = await admit(svc);
    await until(async () => ((await status(svc, taskId)) === 'input_required' ? true : undefined));
    const bob = await svc.answers.answer({ auth: 'globex/bob', taskId, responses: { approve: { action: 'accept' } } });
    expect(bob).toMatchObject({ decision: 'BLOCK_AUTH', record: null });
    expect(await outstanding(svc, taskId)).toEqual(['approve']);
    expect((await svc.answers.answer({ auth: AUTH, taskId, responses: { nope: { action: 'accept' } } })).keys).toEqual({ nope: 'IGNORE_UNKNOWN_KEY' });
    await svc.answers.answer({ auth: AUTH, taskId, responses: { approve: { action: 'decline' } } });
    const again = await svc.answers.answer({ auth: AUTH, taskId, responses: { approve: { action: 'accept' } } });
    expect(again.keys).toEqual({ approve: 'BLOCK_ANSWER_REWRITE' });
    await until(async () => ((await outstanding(svc, taskId)).length === 2 ? true : undefined));
    expect((await svc.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('CANCEL_TASK');
    const late = await svc.answers.answer({ auth: AUTH, taskId, responses: { who: { action: 'accept' }, why: { action: 'accept' } } });
    expect(late.decision).toBe('BLOCK_TERMINAL');
    await new Promise((r) => setTimeout(r, 150));
    expect(await status(svc, taskId)).toBe('cancelled');
  });

  it('a question unanswered past its timeoutMs ends the task failed, naming the key; a later answer is BLOCK_TERMINAL', async () => {
    const [store] = await fresh('deadline');
    const svc = guardOn(store!);
    const runs = { n: 0 };
    const tool = defineTool({
      name: 'approve',
      description: 'asks with a deadline',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async (_args, ctx) => {
        runs.n++;
        await ctx.elicit({ message: 'Approve soon?', requestedSchema: { type: 'object' } }, { key: 'soon', timeoutMs: 150 });
        return { content: [{ type: 'text', text: 'approved' }] };
      },
    }) as unknown as TaskTool;
    worker(svc, tool, 'w1');
    const sweeper = new ExpirySweeper(svc, () => svc.context.clock(), { intervalMs: 0, inputDeadlineIntervalMs: 40 });
    sweeper.start();
    stops.push(() => sweeper.stop());
    const taskId = await admit(svc);
    await until(async () => ((await status(svc, taskId)) === 'input_required' ? true : undefined));
    const [question] = await svc.answers.lookupInputs({ auth: AUTH, taskId });
    expect(question!.deadlineAt! - question!.askedAt).toBe(150);
    // A waiting result wakes on the failure (published on this guard's change feed).
    const result = await awaitTaskResult(svc, { auth: AUTH, taskId, fallbackPollMs: 60_000 });
    expect(result.decision).toBe('RETURN_RESULT');
    expect(result.record).toMatchObject({
      status: 'failed',
      result: { error: { code: -32603, message: expect.stringMatching(/^no answer to input request "soon" before its deadline \(\d{4}-.+Z\)$/) } },
    });
    // Ended by the deadline, not before it (how soon after it is the sweeper's interval, not a test's claim).
    expect(result.record!.lastUpdatedAt).toBeGreaterThanOrEqual(question!.deadlineAt!);
    const late = await svc.answers.answer({ auth: AUTH, taskId, responses: { soon: { action: 'accept' } } });
    expect(late).toMatchObject({ decision: 'BLOCK_TERMINAL', record: null });
    expect(runs.n).toBe(1);
    expect((await store!.auditTrail({ taskId })).filter((e) => e.detail === 'input deadline soon')).toHaveLength(1);
  });

  it('ends the task failed when a re-run asks something else, and when the client cannot be asked', async () => {
    const [store] = await fresh('mismatch');
    const svc = guardOn(store!);
    worker(svc, askingTool({ differentOnRerun: true }).tool, 'w1');
    const taskId = await admit(svc);
    await until(async () => ((await status(svc, taskId)) === 'input_required' ? true : undefined));
    await svc.answers.answer({ auth: AUTH, taskId, responses: { approve: { action: 'accept' } } });
    await until(async () => ((await status(svc, taskId)) === 'failed' ? true : undefined));
    expect((await svc.worker.lookup({ auth: AUTH, taskId })).record?.result).toMatchObject({
      error: { message: expect.stringContaining('asked something else') },
    });
    const blind = await admit(svc, {});
    await until(async () => ((await status(svc, blind)) === 'failed' ? true : undefined));
    expect((await svc.worker.lookup({ auth: AUTH, taskId: blind })).record?.result).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { elicitation: {} } } },
    });
    expect(await svc.answers.lookupInputs({ auth: AUTH, taskId: blind })).toEqual([]);
  });
});
