import { pino } from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTasklatchError } from '../../src/core/errors.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { ClaimInput, TaskStore } from '../../src/store/types.js';
import { defineTool } from '../../src/tools/tool.js';
import { until } from '../support/until.js';

const AUTH = 'acme/alice';

/** Records the app of every claim. */
class WatchedStore extends MemoryStore {
  readonly seenApps: Array<string | undefined> = [];
  override claim(input: ClaimInput) {
    this.seenApps.push(input.app);
    return super.claim(input);
  }
}

/** A `build_report` as one application defines it: its own arguments, its own result. */
const buildReport = (app: string, inputSchema: z.ZodObject = z.object({ month: z.string() })) =>
  defineTool({
    name: 'build_report',
    description: `${app}'s report`,
    inputSchema,
    execution: { taskSupport: 'required' },
    handler: async () => ({ content: [{ type: 'text', text: `report of ${app}` }], structuredContent: { app } }),
  });

/** Log lines as objects, from a pino logger writing to memory. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, sink) };
}

async function admit(runtime: TaskRuntime, args: Record<string, unknown> = { month: '2026-07' }): Promise<string> {
  const created = await runtime.guard.requestor.create({
    auth: AUTH,
    tool: { name: 'build_report', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'build_report', arguments: args, task: {} } },
  });
  return created.record!.taskId;
}

const finished = (store: TaskStore, taskId: string) =>
  until(async () => {
    const record = (await store.get({ authKey: AUTH, taskId, now: Date.now() })).record;
    return record?.status === 'completed' ? record : undefined;
  });

describe('workers of two applications on one store', () => {
  it("each runs only its own app's tasks of a tool both define", async () => {
    const store = new WatchedStore();
    const quiet = pino({ level: 'silent' });
    const billing = createRuntime({ store, app: 'billing', tools: [buildReport('billing')], worker: { pollMs: 10 }, logger: quiet });
    const sales = createRuntime({ store, app: 'sales', tools: [buildReport('sales')], worker: { pollMs: 10 }, logger: quiet });
    // Admitted before either worker looks, so that each worker's first claim sees both tasks.
    const forBilling = await admit(billing);
    const forSales = await admit(sales);
    await Promise.all([billing.start(), sales.start()]);
    try {
      const [b, s] = await Promise.all([finished(store, forBilling), finished(store, forSales)]);
      expect([b.app, b.result]).toEqual(['billing', expect.objectContaining({ structuredContent: { app: 'billing' } })]);
      expect([s.app, s.result]).toEqual(['sales', expect.objectContaining({ structuredContent: { app: 'sales' } })]);
      // The same definition in both apps (only the description differs): the same digest.
      expect([b.toolDigest, s.toolDigest]).toEqual([billing.tools.digest('build_report'), billing.tools.digest('build_report')]);
    } finally {
      await Promise.all([billing.close(), sales.close()]);
    }
    expect(new Set(store.seenApps)).toEqual(new Set(['billing', 'sales']));
  });

  it('runs a task of its own app admitted with another definition of the tool, and says so naming both digests', async () => {
    const store = new MemoryStore();
    const old = createRuntime({ store, app: 'reports', tools: [buildReport('old')], execute: false, logger: pino({ level: 'silent' }) });
    const taskId = await admit(old);
    const admitted = (await store.get({ authKey: AUTH, taskId, now: Date.now() })).record!;
    expect(admitted.toolDigest).toBe(old.tools.digest('build_report'));
    const { lines, logger } = capturedLogger();
    const next = createRuntime({
      store,
      app: 'reports',
      tools: [buildReport('new', z.object({ month: z.string(), format: z.enum(['pdf', 'csv']).optional() }))],
      worker: { pollMs: 10 },
      logger,
    });
    await next.start();
    try {
      expect((await finished(store, taskId)).result).toMatchObject({ structuredContent: { app: 'new' } });
    } finally {
      await next.close();
    }
    const warning = lines.find((line) => line.taskId === taskId && line.level === 40);
    expect(warning).toMatchObject({
      app: 'reports',
      tool: 'build_report',
      admittedDigest: admitted.toolDigest,
      workerDigest: next.tools.digest('build_report'),
    });
    expect(warning!.admittedDigest).not.toBe(warning!.workerDigest);
    // The same definition says nothing: rewording the description changes no digest.
    const same = defineTool({ ...buildReport('old'), description: 'reworded' });
    expect(createRuntime({ store, tools: [same], execute: false }).tools.digest('build_report')).toBe(admitted.toolDigest);
  });

  it('refuses an app name that is empty, too long, unprintable or padded, before anything starts', () => {
    const store = new MemoryStore();
    for (const app of ['', 'x'.repeat(101), 'bad\nname', 'tab\tname', ' padded', 'padded ', 'zero\u200bwidth']) {
      const error: unknown = (() => {
        try {
          createRuntime({ store, app, tools: [buildReport('x')] });
          return null;
        } catch (caught) {
          return caught;
        }
      })();
      expect(isTasklatchError(error, 'INVALID_INPUT'), JSON.stringify(app)).toBe(true);
    }
    expect(createRuntime({ store, tools: [buildReport('x')], execute: false }).app).toBe('default');
    expect(createRuntime({ store, app: 'x'.repeat(100), tools: [buildReport('x')], execute: false }).app).toHaveLength(100);
    expect(createRuntime({ store, app: 'Relevés — équipe 2', tools: [buildReport('x')], execute: false }).app).toBe('Relevés — équipe 2');
  });
});
