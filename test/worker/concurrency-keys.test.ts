import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callTool, type ToolCall } from '../../src/runtime/requests/call-tool.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { authKeyOf } from '../../src/tools/principal.js';
import { defineTool, type TaskTool, type ToolContext } from '../../src/tools/tool.js';
import type { TaskStore } from '../../src/store/types.js';
import { memoryHarness, postgresHarness, sqliteHarness } from '../support/stores.js';
import { until } from '../support/until.js';

// Runs of a tool limited to 2 per key, across two workers (two runtimes, each with slots for 4):
// the handler counts the runs of each key in flight when it starts and ends, and holds until the
// test lets it go, so a claim that broke the limit would be seen as a third run at once.

const ALICE = { tenant: 'acme', subject: 'alice' };
const AUTH = authKeyOf(ALICE);
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** What the handlers saw: runs in flight per key, the most at once, and the runs held open. */
class Overlap {
  readonly active = new Map<string, number>();
  readonly most = new Map<string, number>();
  /** The runs held open, by key, in the order they started. */
  readonly held = new Map<string, Array<() => void>>();
  started = 0;
  /** Set by `releaseAll`: a run that starts later (a test that ended first) is not held. */
  private closed = false;

  enter(key: string): void {
    const now = (this.active.get(key) ?? 0) + 1;
    this.active.set(key, now);
    this.most.set(key, Math.max(now, this.most.get(key) ?? 0));
    this.started++;
  }

  hold(key: string, release: () => void): void {
    if (this.closed) return release();
    const list = this.held.get(key) ?? [];
    list.push(release);
    this.held.set(key, list);
  }

  releaseAll(): void {
    this.closed = true;
    for (const list of this.held.values()) for (const release of list.splice(0)) release();
  }

  leave(key: string): void {
    this.active.set(key, (this.active.get(key) ?? 0) - 1);
  }
}

function limitedTool(seen: Overlap): TaskTool {
  return defineTool({
    name: 'call_partner',
    description: 'calls a partner API, at most twice at a time per customer',
    inputSchema: z.object({ customer: z.string(), n: z.number() }),
    execution: { taskSupport: 'required' },
    concurrency: { limit: 2, key: (args) => args.customer },
    handler: async (args) => {
      seen.enter(args.customer);
      await new Promise<void>((resolve) => seen.hold(args.customer, resolve));
      seen.leave(args.customer);
      return { content: [{ type: 'text', text: `${args.customer} ${args.n}` }] };
    },
  });
}

const call = (args: Record<string, unknown>): ToolCall => ({
  principal: ALICE,
  params: { name: 'call_partner', arguments: args, task: { ttl: 600_000 } },
  headerKey: null,
  asks: 'accepted',
  clientTakesTasks: true,
  context: () => ({}) as ToolContext,
  plainContext: true,
});

describe.each([memoryHarness, sqliteHarness, postgresHarness])('a tool limited to 2 runs per key, on the $name store', (harness) => {
  it('runs 8 tasks of one key never more than 2 at a time, and all of them to the end', async () => {
    const stores: TaskStore[] = await harness.openMany('concurrency_workers', 3);
    closers.push(async () => {
      for (const s of new Set(stores)) await s.close();
    });
    const seen = new Overlap();
    const quiet = pino({ level: 'silent' });
    const worker = { pollMs: 5_000, concurrency: 4 };
    const runtimes: TaskRuntime[] = [
      createRuntime({ store: stores[0]!, tools: [limitedTool(seen)], worker, logger: quiet }),
      createRuntime({ store: stores[1]!, tools: [limitedTool(seen)], worker, logger: quiet }),
    ];
    // Admitted by a process without workers, so every task goes through the claim.
    const admitting = createRuntime({ store: stores[2]!, tools: [limitedTool(seen)], execute: false, logger: quiet });
    closers.push(async () => {
      seen.releaseAll();
      await Promise.all([...runtimes, admitting].map((r) => r.close()));
    });
    const ids: string[] = [];
    for (let n = 0; n < 8; n++) {
      const outcome = await callTool(admitting, call({ customer: 'acme', n }));
      if (outcome.kind !== 'task') throw new Error(`not a task: ${outcome.kind}`);
      ids.push(outcome.record.taskId);
    }
    const beta = await callTool(admitting, call({ customer: 'beta', n: 0 }));
    await Promise.all(runtimes.map((r) => r.start()));
    // Both slots of acme taken, and beta's own key runs beside them.
    await until(() => (seen.active.get('acme') === 2 && seen.active.get('beta') === 1 ? true : undefined));
    const waiting = await until(async () => {
      const records = await Promise.all(ids.map(async (id) => (await stores[2]!.get({ authKey: AUTH, taskId: id, now: Date.now() })).record!));
      return records.find((r) => r.leaseOwner === null && r.statusMessage !== null);
    });
    expect(waiting.statusMessage).toBe('waiting for a concurrency slot (key "acme", 2 of 2 running)');
    // Let one run go at a time; each end starts the next waiting task (no poll: it is 5 s away).
    for (let released = 0; released < 8; released++) {
      const expected = Math.min(2, 8 - released);
      await until(() => {
        expect(seen.most.get('acme') ?? 0).toBeLessThanOrEqual(2);
        return seen.active.get('acme') === expected ? true : undefined;
      });
      // A run is held from before it counts as active: wait for the one to release.
      const release = await until(() => seen.held.get('acme')?.shift());
      release();
    }
    seen.releaseAll();
    const done = await until(async () => {
      const records = await Promise.all(ids.map(async (id) => (await stores[2]!.get({ authKey: AUTH, taskId: id, now: Date.now() })).record!));
      return records.every((r) => r.status === 'completed') ? records : undefined;
    });
    expect(done).toHaveLength(8);
    expect(seen.most.get('acme')).toBe(2);
    expect(seen.started).toBe(9);
    expect(beta.kind).toBe('task');
  });
  it('holds the limit for tasks admitted by a process whose own workers are idle (no lease in the admission)', async () => {
    const [store] = await harness.openMany('concurrency_admit', 1);
    closers.push(() => store!.close());
    const seen = new Overlap();
    const runtime = createRuntime({ store: store!, tools: [limitedTool(seen)], worker: { pollMs: 5_000, concurrency: 8 }, logger: pino({ level: 'silent' }) });
    closers.push(async () => {
      seen.releaseAll();
      await runtime.close();
    });
    await runtime.start();
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) {
      const outcome = await callTool(runtime, call({ customer: 'acme', n }));
      if (outcome.kind !== 'task') throw new Error(`not a task: ${outcome.kind}`);
      ids.push(outcome.record.taskId);
    }
    for (let released = 0; released < 4; released++) {
      // The worker may not have started a run yet when the probe first looks (none seen: 0).
      await until(() => {
        expect(seen.most.get('acme') ?? 0).toBeLessThanOrEqual(2);
        return seen.active.get('acme') === Math.min(2, 4 - released) ? true : undefined;
      });
      (await until(() => seen.held.get('acme')?.shift()))();
    }
    await until(async () => {
      const records = await Promise.all(ids.map(async (id) => (await store!.get({ authKey: AUTH, taskId: id, now: Date.now() })).record!));
      return records.every((r) => r.status === 'completed') ? true : undefined;
    });
    expect(seen.most.get('acme')).toBe(2);
  });
});
