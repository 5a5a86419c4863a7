import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { plainStep } from '../../src/tools/plain-step.js';
import { roundSteps, StepFailedError, stepOf, type Step } from '../../src/tools/step.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { callPlain, memoryServer } from '../support/mcp.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('steps in a plain call', () => {
  it('run their function inline, with retries waited in process and the value as JSON gives it back', async () => {
    const step = plainStep(new AbortController().signal, 'call:abc', () => 0.5);
    const attempts: number[] = [];
    const value = await step.do('fetch', { retries: { limit: 2, baseDelayMs: 20 } }, ({ attempt }) => {
      attempts.push(attempt);
      if (attempt < 3) throw new Error('not yet');
      return { n: attempt, gone: undefined };
    });
    expect(value).toEqual({ n: 3 });
    expect(attempts).toEqual([1, 2, 3]);
    expect(step.idempotencyKey('fetch')).toBe('call:abc:step:fetch');
  });

  it('fail for good with StepFailedError once retries are used up, or on timeoutMs, or on a value JSON cannot carry', async () => {
    const step = plainStep(new AbortController().signal, 'call:x', () => 0);
    const failed = await step
      .do('always', { retries: { limit: 1, baseDelayMs: 0 } }, () => {
        throw new RangeError('nope');
      })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StepFailedError);
    expect(failed).toMatchObject({ step: 'always', attempts: 2, message: 'nope', error: { message: 'nope', name: 'RangeError' } });
    const slow = await step.do('slow', { timeoutMs: 30 }, () => new Promise(() => undefined)).catch((e: unknown) => e);
    expect(slow).toMatchObject({ attempts: 1, message: 'step "slow" timed out after 30 ms' });
    const date = await step.do('date', () => new Date()).catch((e: unknown) => e);
    expect((date as Error).message).toMatch(/a Date at \$ \(return date\.toISOString\(\)\)/);
  });

  it('keep the task rules: a name used twice, a bad config, a bad sleep are refused', async () => {
    const step = plainStep(new AbortController().signal, 'call:x');
    await step.do('once', () => 1);
    await expect(step.do('once', () => 2)).rejects.toThrow('step name "once" used twice');
    await expect(step.do('', () => 1)).rejects.toThrow(/a step name is text of 1 to 200 characters/);
    await expect(step.do('neg', { timeoutMs: -1 }, () => 1)).rejects.toThrow('step "neg": timeoutMs must be a positive number');
    await expect(step.do('lim', { retries: { limit: 1.5 } }, () => 1)).rejects.toThrow('retries.limit must be a whole number');
    await expect(step.sleep('nan', Number.NaN)).rejects.toThrow('sleep "nan": ms must be a number of milliseconds');
    await expect(step.sleepUntil('bad', new Date('nope'))).rejects.toThrow('sleepUntil needs a valid Date');
  });

  it('take the new path at every patch gate: nothing is replayed in a plain call', async () => {
    const step = plainStep(new AbortController().signal, 'call:p');
    expect([await step.patched('add-a2'), await step.patched('add-a2')]).toEqual([true, true]);
    await expect(step.patched('')).rejects.toThrow(/a step name is text/);
  });

  it('sleep in process until the call is aborted', async () => {
    const controller = new AbortController();
    const step = plainStep(controller.signal, 'call:x');
    const t0 = Date.now();
    await step.sleep('short', 40);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(39);
    const long = step.sleep('long', 60_000);
    setTimeout(() => controller.abort(new Error('client gone')), 20);
    await expect(long).rejects.toThrow('client gone');
    await expect(step.do('after', () => 1)).rejects.toThrow('client gone');
  });

  it('run through the wire: a plain tools/call of a tool with steps', async () => {
    let runs = 0;
    const tool = defineTool({
      name: 'plain_steps',
      description: 'steps in a plain call',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        const a = await ctx.step.do('a', () => ++runs);
        await ctx.step.sleep('nap', 10);
        const b = await ctx.step.do('b', { retries: { limit: 1, baseDelayMs: 0 } }, ({ attempt }) => {
          if (attempt === 1) throw new Error('once');
          return a + 1;
        });
        return { content: [{ type: 'text', text: `${a} ${b} ${ctx.step.idempotencyKey('a').replace(/[0-9a-f-]{36}/, 'ID')}` }] };
      },
    }) as unknown as TaskTool;
    const { server, connect } = await memoryServer({ extraTools: [tool] });
    closers.push(() => server.close());
    const client = await connect();
    const result = await callPlain(client, 'plain_steps', {});
    expect(result.content).toEqual([{ type: 'text', text: '1 2 call:ID:step:a' }]);
    await client.close();
  });
});

describe('roundSteps (a callback run again within one call)', () => {
  it('gives a name an earlier round reached its outcome back; a name twice in one round is still a duplicate', async () => {
    const step = plainStep(new AbortController().signal, 'call:x');
    const rounds = roundSteps(step);
    let ran = 0;
    const first: Step = rounds();
    expect(await first.do('a', () => ++ran)).toBe(1);
    const second = rounds();
    expect(await second.do('a', () => ++ran)).toBe(1);
    expect(await second.do('b', () => ++ran)).toBe(2);
    await expect(second.do('b', () => ++ran)).rejects.toThrow('step name "b" used twice');
    expect(ran).toBe(2);
  });

  it('stepOf reads the steps tasklatch put on an SDK extra, and refuses a context without them', () => {
    const step = plainStep(new AbortController().signal, 'call:x');
    expect(stepOf({ signal: null, step })).toBe(step);
    expect(() => stepOf({ signal: null })).toThrow('this call was not run by tasklatch');
  });
});

describe('now, random and uuid in a plain call', () => {
  it('compute their value (nothing is recorded), keep the step rules, and a later round of one call gets the same values', async () => {
    const step = plainStep(new AbortController().signal, 'call:x');
    const before = Date.now();
    const at = await step.now('at');
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
    const r = await step.random('r');
    expect(r >= 0 && r < 1).toBe(true);
    expect(await step.uuid('id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await expect(step.random('at')).rejects.toThrow('step name "at" used twice');
    await expect(step.uuid('')).rejects.toThrow(/a step name is text of 1 to 200 characters/);

    const rounds = roundSteps(plainStep(new AbortController().signal, 'call:y'));
    const first = rounds();
    const values = [await first.now('t'), await first.random('r'), await first.uuid('u')];
    const second = rounds();
    expect([await second.now('t'), await second.random('r'), await second.uuid('u')]).toEqual(values);
  });
});
