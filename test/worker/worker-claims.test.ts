import { awaitTaskResult } from '../../src/service/result-wait.js';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { IDEMPOTENCY_META_KEY } from '../../src/core/create-rules.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import type { TaskStore } from '../../src/store/types.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { Worker, type WorkerOptions } from '../../src/worker/worker.js';
import { ALL_CAPS, record } from '../support/records.js';
import { ALL_HARNESSES } from '../support/stores.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

// When the worker looks at the outbox: once per change event and whenever the last claim filled
// every free slot; not after every finished run. The poll is far away in these tests (60 s), so
// whatever the worker claims, it claims because it was told of it.

const AUTH = 'acme/alice';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A tool whose runs end at once, or wait for the test when `held` (all but the first `quick`). */
function tool(held = false, quick = 0) {
  const waiting: Array<() => void> = [];
  const started: string[] = [];
  const defined = defineTool({
    name: 'job',
    description: 'ends at once, or when the test says',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    handler: async (_args, ctx) => {
      started.push(ctx.taskId ?? '');
      if (held && started.length > quick) await new Promise<void>((resolve) => waiting.push(resolve));
      return { content: [{ type: 'text', text: 'done' }] };
    },
  }) as unknown as TaskTool;
  return { tool: defined, waiting, started };
}

describe.each(ALL_HARNESSES)('Worker claims on the $name store', (harness) => {
  /** A store whose claims are counted: how many, and how many tasks each returned. */
  async function counted(label: string) {
    const store = await harness.open(`worker_claims_${label}`);
    stops.push(() => store.close());
    const claims: number[] = [];
    const counting = Object.assign(Object.create(store) as TaskStore, {
      claim: async (input: Parameters<TaskStore['claim']>[0]) => {
        const claimed = await store.claim(input);
        claims.push(claimed.length);
        return claimed;
      },
    });
    const guard = openGuard({ store: counting, capabilities: ALL_CAPS, limits: { pollInterval: 100, minTtl: 1 } });
    return { guard, claims };
  }

  function start(guard: Guard, t: TaskTool, options: WorkerOptions = {}): Worker {
    const worker = new Worker(guard.worker, new ToolRegistry([t]), { pollMs: 60_000, ...options });
    worker.start();
    stops.push(() => worker.stop(100));
    return worker;
  }

  async function admit(guard: Guard): Promise<string> {
    const out = await createTask(guard, {
      auth: AUTH,
      tool: { name: 'job', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'job', arguments: {}, task: {} } },
    });
    return out.record!.taskId;
  }

  const statusOf = async (guard: Guard, taskId: string) => (await guard.worker.lookup({ auth: AUTH, taskId })).record?.status;

  it('claims once per task: a run that ended its task sends the worker to the outbox no more', async () => {
    const { guard, claims } = await counted('per_task');
    start(guard, tool().tool);
    await until(() => (claims.length > 0 ? true : undefined));
    const tasks = 10;
    for (let i = 0; i < tasks; i++) {
      const taskId = await admit(guard);
      await until(async () => ((await statusOf(guard, taskId)) === 'completed' ? true : undefined));
    }
    // A moment for a look that a finished run would cause.
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The look at start, then one per admission, each finding its task; a store that leases an
    // admitted task to a free slot in the admission itself needs none of them.
    const perAdmission = guard.context.store.supports.claimsOnAdmit === true ? [] : Array.from({ length: tasks }, () => 1);
    expect(claims).toEqual([0, ...perAdmission]);
  });

  it('a run whose task ended elsewhere (cancelled) sends the worker to the outbox no more', async () => {
    const { guard, claims } = await counted('ended_elsewhere');
    const { tool: held, waiting, started } = tool(true);
    const stopped: unknown[] = [];
    start(guard, held, { hooks: { log: (_level, _msg, fields) => void (fields?.event === 'run:stopped' ? stopped.push(fields.reason) : undefined) } });
    await until(() => (claims.length > 0 ? true : undefined));
    const taskId = await admit(guard);
    await until(() => (started.length === 1 ? true : undefined));
    const before = [...claims];
    expect((await guard.requestor.cancel({ auth: AUTH, taskId })).decision).toBe('CANCEL_TASK');
    waiting[0]!();
    await until(() => (stopped.length > 0 ? true : undefined));
    expect(stopped).toEqual(['cancelled']);
    // A moment for a look that the ended run would cause: its task is terminal, nothing of it is due.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(claims).toEqual(before);
  });

  it('with every slot busy, an admission is claimed as soon as a slot frees', async () => {
    const { guard, claims } = await counted('busy');
    const { tool: held, waiting, started } = tool(true);
    start(guard, held, { concurrency: 1 });
    // The look at start holds the slot while it is in flight: the first admission comes after it.
    await until(() => (claims.length > 0 ? true : undefined));
    const first = await admit(guard);
    await until(() => (started.length === 1 ? true : undefined));
    const second = await admit(guard);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The slot is busy: the admission is owed a look, not claimed yet.
    expect(started).toEqual([first]);
    waiting[0]!();
    await until(() => (started.length === 2 ? true : undefined));
    expect(started).toEqual([first, second]);
    waiting[1]!();
    await until(async () => ((await statusOf(guard, second)) === 'completed' ? true : undefined));
    // The first found a free slot (leased by its admission where the store can); the second none.
    expect(claims.filter((n) => n > 0)).toEqual(guard.context.store.supports.claimsOnAdmit === true ? [1] : [1, 1]);
  });

  it('a claim that filled every free slot looks again as soon as a slot frees', async () => {
    const { guard, claims } = await counted('filled');
    const { tool: held, waiting, started } = tool(true);
    // Admitted before the worker starts: no change event will tell of them later.
    const ids = [await admit(guard), await admit(guard), await admit(guard)];
    start(guard, held, { concurrency: 2 });
    await until(() => (started.length === 2 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(started).toHaveLength(2);
    waiting[0]!();
    await until(() => (started.length === 3 ? true : undefined));
    expect([...started].sort()).toEqual([...ids].sort());
    for (const release of waiting.slice(1)) release();
    await until(async () => ((await Promise.all(ids.map((id) => statusOf(guard, id)))).every((s) => s === 'completed') ? true : undefined));
    expect(claims.filter((n) => n > 0)).toEqual([2, 1]);
  });

  it.runIf(harness.name === 'postgres')('leases an admission to a free slot in the admission itself: one attempt, one claim line, no claim', async () => {
    const { guard, claims } = await counted('on_admit');
    start(guard, tool().tool);
    await until(() => (claims.length > 0 ? true : undefined));
    const out = await createTask(guard, {
      auth: AUTH,
      tool: { name: 'job', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'job', arguments: {}, task: {}, _meta: { [IDEMPOTENCY_META_KEY]: 'k1' } } },
    });
    const taskId = out.record!.taskId;
    expect(out.record).toMatchObject({ version: 1, attempt: 0 });
    await until(async () => ((await statusOf(guard, taskId)) === 'completed' ? true : undefined));
    const done = (await guard.worker.lookup({ auth: AUTH, taskId })).record!;
    expect(done).toMatchObject({ attempt: 1, version: 3, leaseOwner: null });
    const trail = await guard.context.store.auditTrail({ taskId });
    expect(trail.map((line) => [line.surface, line.decision, line.version ?? null])).toEqual([
      ['create', 'ACCEPT_TASK', null],
      ['transition', 'APPLY_TRANSITION', 2],
      ['transition', 'APPLY_TRANSITION', 3],
    ]);
    expect(trail[1]!.detail).toMatch(/^claim /);
    // A retry of the same call replays the task: nothing is leased again, nothing runs again.
    const again = await createTask(guard, {
      auth: AUTH,
      tool: { name: 'job', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'job', arguments: {}, task: {}, _meta: { [IDEMPOTENCY_META_KEY]: 'k1' } } },
    });
    expect(again.decision).toBe('REPLAY_TASK');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await guard.worker.lookup({ auth: AUTH, taskId })).record).toMatchObject({ attempt: 1, version: 3 });
    expect(claims).toEqual([0]);
  });

  it('a task waiting in the outbox is not passed over by admissions that keep every slot busy', async () => {
    const { guard, claims } = await counted('fair');
    const slow = defineTool({
      name: 'job',
      description: 'takes a few milliseconds',
      inputSchema: z.object({}),
      execution: { taskSupport: 'required' },
      handler: async () => {
        await new Promise((resolve) => setTimeout(resolve, 3));
        return { content: [{ type: 'text', text: 'done' }] };
      },
    }) as unknown as TaskTool;
    start(guard, slow, { concurrency: 2, pollMs: 3_600_000 });
    await until(() => (claims.length > 0 ? true : undefined));
    // Six requestors in a closed loop on two slots: every slot that frees is wanted at once by an
    // admission and by a task admitted earlier that found none. The worker's poll is an hour away
    // (and the requestors' a minute): a task passed over would wait for it, and the loop would
    // never finish.
    let answered = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        for (let i = 0; i < 8; i++) {
          const taskId = await admit(guard);
          const out = await awaitTaskResult(guard, { auth: AUTH, taskId, fallbackPollMs: 60_000 });
          expect(out.decision).toBe('RETURN_RESULT');
          answered += 1;
        }
      }),
    );
    expect(answered).toBe(48);
  });

  it("frees a run's slot when its handler returns, not when its terminal write is done", async () => {
    const { guard } = await counted('handler_done');
    const { tool: quick, started } = tool();
    let letWrite: () => void = () => undefined;
    const writeHeld = new Promise<void>((resolve) => (letWrite = resolve));
    start(guard, quick, { concurrency: 1, hooks: { beforeTerminalWrite: () => (started.length === 1 ? writeHeld : undefined) } });
    const first = await admit(guard);
    await until(() => (started.length === 1 ? true : undefined));
    // The first run's terminal write waits: its slot is free all the same.
    const second = await admit(guard);
    await until(async () => ((await statusOf(guard, second)) === 'completed' ? true : undefined));
    expect(await statusOf(guard, first)).toBe('working');
    letWrite();
    await until(async () => ((await statusOf(guard, first)) === 'completed' ? true : undefined));
  });

  it('does not hold for an admission the slot a look is owed for, nor one a claim in flight may fill', async () => {
    const { guard, claims } = await counted('owed');
    const worker = start(guard, tool().tool, { concurrency: 1 });
    await until(() => (claims.length > 0 ? true : undefined));
    // A change names a task that may have come due before the next admission: the free slot is
    // its look's, then its claim's while that is in flight.
    guard.context.changes.publish('earlier-task', 1);
    expect(worker.reserve('job')).toBeNull();
    await until(() => (claims.length > 1 ? true : undefined));
    // The look found nothing: the slot is free for admissions again.
    await until(() => worker.reserve('job') ?? undefined).then((held) => held.release());
  });

  it("does not look at the outbox for another process's change that ended a task, and does for one that did not", async () => {
    const { guard, claims } = await counted('terminal_news');
    start(guard, tool().tool);
    await until(() => (claims.length > 0 ? true : undefined));
    // Another process completed a task this worker does not run, and the store brought its
    // terminal record: nothing is due because of it. (No admission here: its own change would
    // send the worker to the outbox.)
    const taskId = randomUUID();
    const done = record({ taskId, authKey: AUTH, toolName: 'other', status: 'completed', version: 3, result: { content: [] } });
    guard.context.changes.publishRemote(taskId, 3, done);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(claims).toEqual([0]);
    // A change that says only "look again" (a lease given back, an answer) sends it to the outbox.
    guard.context.changes.publishRemote(taskId, 4);
    await until(() => (claims.length > 1 ? true : undefined));
    expect(claims).toEqual([0, 0]);
  });

  /**
   * A worker of two slots with `n` admissions held (all it holds), then a change while they are
   * held: a look is owed, and none happens yet. A loop that did not count the held admissions
   * would spin on it and starve the timer.
   */
  async function heldWithLookOwed(label: string, n: number, options: WorkerOptions) {
    const { guard, claims } = await counted(label);
    const worker = start(guard, tool().tool, { concurrency: 2, ...options });
    await until(() => (claims.length > 0 ? true : undefined));
    // One task run first: handlers here return at once.
    await completed(guard, await admit(guard));
    const before = claims.length;
    const held = Array.from({ length: n }, () => worker.reserve('job'));
    expect(held.every((r) => r !== null)).toBe(true);
    expect(worker.reserve('job')).toBeNull();
    guard.context.changes.publish('some-task', 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(claims).toHaveLength(before);
    const looked = async () => {
      await until(() => (claims.length > before ? true : undefined));
      expect(claims.slice(before)).toEqual([0]);
    };
    return { worker, looked, held: held as NonNullable<(typeof held)[number]>[] };
  }

  const completed = (guard: Guard, taskId: string) => until(async () => ((await statusOf(guard, taskId)) === 'completed' ? true : undefined));

  it('waits, without spinning, while every free slot is held for admissions in flight', async () => {
    // Admissions lease only to a free slot: two slots, two admissions in flight.
    const { looked, held } = await heldWithLookOwed('reserved', 2, { admissionWaitMs: 0 });
    // A slot given back: the owed look happens.
    held[0]!.release();
    await looked();
    held[1]!.release();
  });

  it('holds up to as many admissions again as it has slots when their tasks may wait for one, and none while a look is owed', async () => {
    const { worker, looked, held } = await heldWithLookOwed('beyond', 4, {});
    // While the look is owed no admission is held beyond the free slots: given back down to one
    // held, the look takes the other slot.
    held[0]!.release();
    expect(worker.reserve('job')).toBeNull();
    held[1]!.release();
    held[2]!.release();
    await looked();
    held[3]!.release();
  });

  it('holds admissions only for its open slots while its handlers run long', async () => {
    const { guard, claims } = await counted('long_handlers');
    const { tool: held, waiting, started } = tool(true);
    const worker = start(guard, held, { concurrency: 1, admissionWaitMs: 100 });
    await until(() => (claims.length > 0 ? true : undefined));
    // A handler that took longer than a quarter of the wait.
    const first = await admit(guard);
    await until(() => (started.length === 1 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 40));
    waiting[0]!();
    await completed(guard, first);
    const one = worker.reserve('job');
    expect(one).not.toBeNull();
    expect(worker.reserve('job')).toBeNull();
    one!.release();
  });

  it.runIf(harness.name === 'postgres')('an admission leased when every slot was taken starts when a handler returns, with no claim', async () => {
    const { guard, claims } = await counted('waiting');
    const { tool: held, waiting, started } = tool(true, 1);
    start(guard, held, { concurrency: 1 });
    await until(() => (claims.length > 0 ? true : undefined));
    // One task run first: its handler returned at once.
    await completed(guard, await admit(guard));
    // Both in flight at once: each holds a slot of the worker's one and the one beyond it.
    const [a, b] = await Promise.all([admit(guard), admit(guard)]);
    await until(() => (started.length === 2 ? true : undefined));
    const [first, second] = started[1] === a ? [a, b] : [b, a];
    // The second is leased to the worker and waits for its slot.
    expect((await guard.worker.lookup({ auth: AUTH, taskId: second })).record).toMatchObject({ status: 'working', attempt: 1 });
    expect((await guard.worker.lookup({ auth: AUTH, taskId: second })).record?.leaseOwner).not.toBeNull();
    waiting[0]!();
    await until(() => (started.length === 3 ? true : undefined));
    expect(started.slice(1)).toEqual([first, second]);
    waiting[1]!();
    await completed(guard, second);
    expect((await guard.worker.lookup({ auth: AUTH, taskId: second })).record).toMatchObject({ attempt: 1, version: 3 });
    expect(claims).toEqual([0]);
  });

  it.runIf(harness.name === 'postgres')('gives back the lease of a task no slot freed for in time, and claims it once one does', async () => {
    const { guard, claims } = await counted('given_back');
    const { tool: held, waiting, started } = tool(true, 1);
    start(guard, held, { concurrency: 1, admissionWaitMs: 400 });
    await until(() => (claims.length > 0 ? true : undefined));
    await completed(guard, await admit(guard));
    const [a, b] = await Promise.all([admit(guard), admit(guard)]);
    await until(() => (started.length === 2 ? true : undefined));
    const second = started[1] === a ? b : a;
    // No handler returned in time: the lease is given back, due for any worker at once.
    await until(async () => ((await guard.worker.lookup({ auth: AUTH, taskId: second })).record?.leaseOwner === null ? true : undefined));
    const trail = await guard.context.store.auditTrail({ taskId: second });
    expect(trail.map((line) => line.decision)).toContain('RELEASE_LEASE');
    expect(started).toHaveLength(2);
    // The slot frees: the worker claims the task.
    waiting[0]!();
    await until(() => (started.length === 3 ? true : undefined));
    expect(started[2]).toBe(second);
    waiting[1]!();
    await completed(guard, second);
    expect(claims.filter((n) => n > 0)).toEqual([1]);
  });

  it.runIf(harness.name === 'postgres')('gives back at once the lease of a task still waiting for a slot when it stops', async () => {
    const { guard, claims } = await counted('stop_waiting');
    const { tool: held, waiting, started } = tool(true, 1);
    const worker = new Worker(guard.worker, new ToolRegistry([held]), { pollMs: 60_000, concurrency: 1, admissionWaitMs: 3_600_000 });
    worker.start();
    await until(() => (claims.length > 0 ? true : undefined));
    await completed(guard, await admit(guard));
    const [a, b] = await Promise.all([admit(guard), admit(guard)]);
    await until(() => (started.length === 2 ? true : undefined));
    const second = started[1] === a ? b : a;
    expect((await guard.worker.lookup({ auth: AUTH, taskId: second })).record?.leaseOwner).toBe(worker.id);
    const stopped = worker.stop(10_000);
    await until(async () => ((await guard.worker.lookup({ auth: AUTH, taskId: second })).record?.leaseOwner === null ? true : undefined));
    waiting[0]!();
    await stopped;
    expect(started).toHaveLength(2);
    expect(await statusOf(guard, second)).toBe('working');
  });
});
