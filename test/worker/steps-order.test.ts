import { afterEach, describe, expect, it } from 'vitest';
import type { ToolContext } from '../../src/tools/tool.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { AUTH, resultText, stepTool, stepWorld, text, type StepWorld } from '../support/steps.js';
import { until } from '../support/until.js';

const worlds: StepWorld[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

const approve = (ctx: ToolContext) => ctx.elicit({ message: 'Ship it?', requestedSchema: { type: 'object' } }, { key: 'approve' });

describe.each(ALL_HARNESSES)('the order of steps, sleeps and asks on the $name store', (harness) => {
  async function world(label: string): Promise<StepWorld> {
    const w = await stepWorld(harness, label);
    worlds.push(w);
    return w;
  }

  /**
   * Runs `handler(ctx, run)` as a task (run 1, 2, …) and returns the ended record. Its tool asks
   * to fail on a journal mismatch, so that the order error is the task's outcome to read (by
   * default the task parks instead: steps-park.test.ts).
   */
  async function runTask(label: string, handler: (ctx: ToolContext, run: number) => Promise<void>, answer = false) {
    const w = await world(label);
    let runs = 0;
    w.worker(
      Object.assign(
        stepTool(label, async (_args, ctx) => {
          await handler(ctx, ++runs);
          return text('handler returned');
        }),
        { onJournalMismatch: 'fail' as const },
      ),
    );
    const taskId = await w.admit(label);
    if (answer) {
      await until(async () => ((await w.record(taskId))?.status === 'input_required' ? true : undefined));
      expect((await w.svc.answers.answer({ auth: AUTH, taskId, responses: { approve: { action: 'accept' } } })).decision).toBe('APPLY_ANSWER');
    }
    return { w, taskId, record: await w.settled(taskId), runs: () => runs };
  }

  it('a run that reaches another step where the journal has one ends the task failed (onJournalMismatch: fail) naming both, even if the handler catches it', async () => {
    const { record, runs } = await runTask('reorder', async (ctx, run) => {
      if (run === 1) {
        await ctx.step.do('charge-card', () => 'ch_1');
        await ctx.step.sleep('settle', 60);
        return;
      }
      try {
        await ctx.step.do('send-email', () => 'sent');
      } catch {
        // Swallowed: the task fails all the same.
      }
    });
    expect(runs()).toBe(2);
    expect(record.status).toBe('failed');
    expect(record.result).toEqual({
      error: { code: -32603, message: 'step order changed at position 0: the journal has step "charge-card" and this run asked for step "send-email"' },
    });
  });

  it('a sleep where the journal has a step of the same name is an order change too', async () => {
    const { record } = await runTask('kinds', async (ctx, run) => {
      if (run === 1) await ctx.step.sleep('wait', 60);
      else await ctx.step.do('wait', () => 1);
    });
    expect(resultText(record)).toBe('step order changed at position 0: the journal has sleep "wait" and this run asked for step "wait"');
  });

  it('a step name used twice in a run ends the task failed, and nothing after it runs as a step', async () => {
    let third = 0;
    const { record } = await runTask('twice', async (ctx) => {
      await ctx.step.do('a', () => 1);
      await ctx.step.do('a', () => 2).catch(() => undefined);
      await ctx.step
        .do('b', () => {
          third++;
          return 3;
        })
        .catch(() => undefined);
    });
    expect(record.status).toBe('failed');
    expect(resultText(record)).toBe('step name "a" used twice');
    expect(third).toBe(0);
  });

  it('steps and asks share the positions: an answered ask between two steps runs each step once', async () => {
    const counts = { reserve: 0, ship: 0 };
    const { w, taskId, record, runs } = await runTask(
      'interleave',
      async (ctx) => {
        await ctx.step.do('reserve', () => ++counts.reserve);
        await approve(ctx);
        await ctx.step.do('ship', () => ++counts.ship);
      },
      true,
    );
    expect(record.status).toBe('completed');
    expect(runs()).toBe(2);
    expect(counts).toEqual({ reserve: 1, ship: 1 });
    const [question] = await w.svc.answers.lookupInputs({ auth: AUTH, taskId });
    expect(question).toMatchObject({ key: 'approve', position: 1 });
    expect((await w.svc.worker.lookupSteps({ auth: AUTH, taskId })).map((s) => `${s.position} ${s.name}`)).toEqual(['0 reserve', '2 ship']);
  });

  it('a fresh ask while a recorded step is still ahead, or a fresh step while a stored ask is, is an order change', async () => {
    const askFirst = await runTask('ask-moved', async (ctx, run) => {
      if (run === 1) {
        await ctx.step.do('reserve', () => 1);
        await ctx.step.sleep('settle', 30);
        return;
      }
      await approve(ctx);
    });
    expect(resultText(askFirst.record)).toBe('step order changed at position 0: the journal has step "reserve" and this run asked for ask "approve"');
    const stepFirst = await runTask(
      'step-moved',
      async (ctx, run) => {
        if (run > 1) await ctx.step.do('reserve', () => 1);
        await approve(ctx);
      },
      true,
    );
    expect(resultText(stepFirst.record)).toBe('step order changed at position 0: the journal has ask "approve" and this run asked for step "reserve"');
  });

  it('recorded entries are known by name (asks by their turn): reached in another order they replay, and nothing runs twice', async () => {
    const counts = { reserve: 0, ship: 0 };
    const { record, runs } = await runTask(
      'swapped',
      async (ctx, run) => {
        const reserve = () => ctx.step.do('reserve', () => ++counts.reserve);
        if (run === 1) await reserve();
        await approve(ctx);
        if (run > 1) await reserve();
        await ctx.step.do('ship', () => ++counts.ship);
      },
      true,
    );
    expect(record.status).toBe('completed');
    expect(runs()).toBe(2);
    expect(counts).toEqual({ reserve: 1, ship: 1 });
  });
});
