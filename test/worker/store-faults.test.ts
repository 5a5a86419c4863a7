import { afterEach, describe, expect, it } from 'vitest';
import { isStoreFault } from '../../src/core/errors.js';
import type { TaskRecord } from '../../src/core/types.js';
import { openGuard } from '../../src/service/guard.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import type { ToolContext, ToolResult } from '../../src/tools/tool.js';
import { Worker } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { AUTH, ELICIT, resultText, stepTool, text } from '../support/steps.js';
import { FAULT_TEXT, StoreFaults } from '../support/store-faults.js';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

// A store fault at each call a run makes (claim, heartbeat, journal read, step record, stored
// questions, ask, release, status and terminal writes, progress) and at the requestor's answer,
// on both SQL stores: the run rides through it or stops and runs again; the task is never
// failed, its stored outcome never carries the store's text, each step runs once, and the task
// completes once the store is back.

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** What a handler does around its question, and how it meets a failed ask. */
type Handling = 'plain' | 'rethrows with cause' | 'rethrows its own text' | 'swallows';

/** Charges once (a durable step), reports progress and status, asks, and returns what it was told. */
function journey(faults: StoreFaults, handling: Handling, beforeAsk: () => Promise<void>) {
  const runs = { handler: 0, charge: 0 };
  const tool = stepTool('journey', async (_args, ctx: ToolContext): Promise<ToolResult> => {
    runs.handler++;
    const charged = await ctx.step.do('charge', () => ++runs.charge);
    await ctx.reportProgress(1, 2, 'charged');
    await ctx.reportStatus('about to ask');
    await beforeAsk();
    let action: string;
    try {
      action = (await ctx.elicit({ message: 'Ship?', requestedSchema: { type: 'object' } }, { key: 'ship' })).action;
    } catch (error) {
      if (handling === 'plain') throw error;
      if (handling === 'rethrows with cause') throw new Error('could not ask', { cause: error });
      if (handling === 'rethrows its own text') throw new Error(`could not ask: ${(error as Error).message}`);
      action = 'swallowed';
    }
    return text(`charged ${charged}, ${action}`);
  });
  return { tool, runs, faults };
}

type Method = 'claim' | 'heartbeat' | 'steps' | 'recordStep' | 'inputs' | 'ask' | 'release' | 'transition' | 'publishProgress' | 'answer';

/** Each call faulted, when it is armed (at admission, or just before the handler asks) and how many times. */
const CASES: Array<{ method: Method; times: number; when: 'admission' | 'before ask'; handling?: Handling }> = [
  { method: 'claim', times: 3, when: 'admission' },
  { method: 'heartbeat', times: 2, when: 'before ask' },
  { method: 'steps', times: 2, when: 'admission' },
  { method: 'recordStep', times: 2, when: 'admission' },
  { method: 'inputs', times: 2, when: 'admission' },
  { method: 'ask', times: 2, when: 'before ask' },
  { method: 'ask', times: 1, when: 'before ask', handling: 'rethrows with cause' },
  { method: 'ask', times: 1, when: 'before ask', handling: 'rethrows its own text' },
  { method: 'ask', times: 1, when: 'before ask', handling: 'swallows' },
  { method: 'release', times: 1, when: 'before ask' },
  { method: 'transition', times: 3, when: 'admission' },
  { method: 'publishProgress', times: 2, when: 'admission' },
  { method: 'answer', times: 2, when: 'admission' },
];

describe.each([sqliteHarness, postgresHarness])('a store fault during a run on the $name store', (harness) => {
  it.each(CASES)(
    'at $method ($times, armed at $when, handler: $handling): never failed, runs again, completes',
    async ({ method, times, when, handling }) => {
      const raw = await harness.open(`faults_${method}`);
      stops.push(() => raw.close());
      const faults = new StoreFaults();
      const svc = openGuard({ store: faults.wrap(raw), capabilities: ALL_CAPS, limits: { pollInterval: 100 } });
      let armedBeforeAsk = false;
      const { tool, runs } = journey(faults, handling ?? 'plain', async () => {
        if (when !== 'before ask' || armedBeforeAsk) return;
        armedBeforeAsk = true;
        faults.arm(method, times);
        // A heartbeat fault is met while the handler runs: it waits for them.
        if (method === 'heartbeat') await faults.hit('heartbeat', times);
      });
      const worker = new Worker(svc.worker, new ToolRegistry([tool]), {
        pollMs: 50,
        leaseMs: 3000,
        hooks: { progress: async (record, progress, total, message) => svc.relay.publishProgress(record, progress, total, message) },
      });
      worker.start();
      stops.push(() => worker.stop(100));
      if (when === 'admission') faults.arm(method, times);

      const admitted = await createTask(svc, {
        auth: AUTH,
        tool: { name: 'journey', execution: { taskSupport: 'required' } },
        request: {
          method: 'tools/call',
          params: { name: 'journey', arguments: {}, task: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': ELICIT } },
        },
      });
      const taskId = admitted.record!.taskId;
      // Read past the faults: the test's own look at the task is not under test.
      const stored = async (): Promise<TaskRecord> => (await raw.get({ authKey: AUTH, taskId, now: Date.now() })).record!;

      const asking = await until(async () => {
        const record = await stored();
        return ['input_required', 'completed', 'failed', 'cancelled'].includes(record.status) ? record : undefined;
      }, 20_000);
      expect(resultText(asking)).toBe('');
      expect(asking.status).toBe('input_required');
      const refused: unknown[] = [];
      await until(async () => {
        try {
          await svc.answers.answer({ auth: AUTH, taskId, responses: { ship: { action: 'accept', content: {} } } });
          return true;
        } catch (error) {
          // The requestor is told to retry, never given a decision.
          refused.push(error);
          expect(isStoreFault(error)).toBe(true);
          return undefined;
        }
      }, 20_000);
      const done = await until(async () => {
        const record = await stored();
        return record.status === 'completed' || record.status === 'failed' ? record : undefined;
      }, 20_000);

      expect(faults.count(method)).toBeGreaterThanOrEqual(1);
      expect(done.status).toBe('completed');
      expect(resultText(done)).toBe('charged 1, accept');
      expect(JSON.stringify(done)).not.toContain('10.255.0.9');
      expect(JSON.stringify(done)).not.toContain(FAULT_TEXT);
      expect(runs.charge).toBe(1);
      if (method === 'answer') expect(refused).toHaveLength(times);
    },
    60_000,
  );
});
