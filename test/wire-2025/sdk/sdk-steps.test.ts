import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { acceptedContent, inputRequired, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../../src/runtime/log.js';
import type { TaskRuntime } from '../../../src/runtime/task-runtime.js';
import { tasklatchWorker } from '../../../src/wire-2025/sdk/attach-tasklatch.js';
import { tasklatchWorkerV2 } from '../../../src/wire-2026/sdk/attach-tasklatch.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import { stepOf } from '../../../src/tools/step.js';
import { AUTH, ELICIT, resultText } from '../../support/steps.js';
import { until } from '../../support/until.js';
import { createTask } from '../../../src/runtime/requests/create-task.js';

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function admit(runtime: TaskRuntime, name: string, args: Record<string, unknown>): Promise<string> {
  const out = await createTask(runtime.guard, {
    auth: AUTH,
    tool: { name, execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name, arguments: args, task: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': ELICIT } } },
  });
  return out.record!.taskId;
}

const settled = (runtime: TaskRuntime, taskId: string, status: string) =>
  until(async () => {
    const r = (await runtime.guard.worker.lookup({ auth: AUTH, taskId })).record;
    return r?.status === status ? r : undefined;
  });

describe('durable steps in SDK tools', () => {
  it('tasklatch/sdk: a registerTool handler gets the steps on its extra (stepOf), and a sleep resumes it', async () => {
    const counts = { hold: 0, pay: 0, runs: 0 };
    const server = new McpServerV1({ name: 'steps-v1', version: '1.0.0' });
    server.registerTool('book', { description: 'books in steps', inputSchema: { nights: z.number() } }, async ({ nights }, extra) => {
      counts.runs++;
      const step = stepOf(extra);
      const hold = await step.do('hold', () => ++counts.hold);
      await step.sleep('wait', 100);
      const pay = await step.do('pay', () => ++counts.pay);
      return { content: [{ type: 'text', text: `${hold}/${pay}/${nights} ${step.idempotencyKey('pay')}` }] };
    });
    const store = new MemoryStore();
    const worker = tasklatchWorker(server, { store, tasks: { book: 'required' }, worker: { pollMs: 20 }, logger: createLogger('silent') });
    await worker.start();
    closing.push(() => worker.close());
    const taskId = await admit(worker.runtime, 'book', { nights: 3 });
    const done = await settled(worker.runtime, taskId, 'completed');
    expect(resultText(done)).toBe(`1/1/3 task:${taskId}:step:pay`);
    expect(counts).toEqual({ hold: 1, pay: 1, runs: 2 });
  });

  it('tasklatch/sdk-v2: steps on the callback’s ctx; a round run again after input_required replays the steps an earlier round reached', async () => {
    const counts = { hold: 0, pay: 0, calls: 0 };
    const server = new McpServerV2({ name: 'steps-v2', version: '1.0.0' });
    server.registerTool('approve_and_pay', { description: 'asks, then pays', inputSchema: z.object({}) }, async (_args, ctx) => {
      counts.calls++;
      const step = stepOf(ctx);
      const hold = await step.do('hold', () => ++counts.hold);
      const ok = acceptedContent(ctx.mcpReq.inputResponses, 'ok', z.object({ ok: z.boolean() }));
      if (ok === undefined)
        return inputRequired({ inputRequests: { ok: inputRequired.elicit({ message: 'Pay?', requestedSchema: z.object({ ok: z.boolean() }) }) } });
      const pay = await step.do('pay', () => ++counts.pay);
      return { content: [{ type: 'text', text: `${hold} ${pay} ${String(ok.ok)}` }] };
    });
    const store = new MemoryStore();
    const worker = tasklatchWorkerV2(server, { store, tasks: { approve_and_pay: 'required' }, worker: { pollMs: 20 }, logger: createLogger('silent') });
    await worker.start();
    closing.push(() => worker.close());
    const taskId = await admit(worker.runtime, 'approve_and_pay', {});
    await settled(worker.runtime, taskId, 'input_required');
    await worker.runtime.guard.answers.answer({ auth: AUTH, taskId, responses: { ok: { action: 'accept', content: { ok: true } } } });
    const done = await settled(worker.runtime, taskId, 'completed');
    expect(resultText(done)).toBe('1 1 true');
    // Run 1: one call (asks); run 2: the call that asks again (answered) and the one that pays.
    expect(counts).toEqual({ hold: 1, pay: 1, calls: 3 });
    const journal = await worker.runtime.guard.worker.lookupSteps({ auth: AUTH, taskId });
    expect(journal.map((s) => `${s.position} ${s.name}`)).toEqual(['0 hold', '2 pay']);
  });
});
