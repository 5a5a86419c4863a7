import { expect, it } from 'vitest';
import { slotOf } from '../../../src/core/concurrency-rules.js';
import { META_KEYS } from '../../../src/core/meta-keys.js';
import type { Fence, TaskRecord } from '../../../src/core/types.js';
import type { StepWrite } from '../../../src/core/step-rules.js';
import type { TaskStore } from '../../../src/store/types.js';
import { HOUR, T0 } from '../../support/records.js';
import { admission, defineStoreSuite, ok, request } from './store-suite.js';

// Concurrency keys: a task admitted with a key and a limit is claimed only while fewer than the
// limit of its (app, tool, key) run (working, leased); the others stay due and unleased, say so
// in their status message, and are claimed once a run ends, gives its lease back or suspends.

const LEASE = 60_000;
const claimAt = (store: TaskStore, owner: string, now: number, limit = 10) =>
  store.claim({ owner, now, leaseMs: LEASE, limit, maxAttempts: 5, abandonedResult: ok, correlationId: `claim-${owner}` });

function keyed(key: string, limit: number, n = 0) {
  const req = request({ month: `2026-${n}` });
  req.params._meta = { [META_KEYS.concurrency]: { key, limit } };
  return admission({ request: req });
}

const fenceOf = (record: TaskRecord): Fence => ({ taskId: record.taskId, authKey: record.authKey, owner: record.leaseOwner!, version: record.version });

defineStoreSuite('concurrency keys', ({ harness, fresh, freshMany }) => {
  async function admitAll(store: TaskStore, key: string, limit: number, count: number): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    for (let i = 0; i < count; i++) out.push((await store.admit(keyed(key, limit, i))).record!);
    return out;
  }
  const read = async (store: TaskStore, record: TaskRecord, now = T0 + 10) =>
    (await store.get({ authKey: record.authKey, taskId: record.taskId, now })).record!;

  it('claims 2 of 5 tasks of a key limited to 2; the others wait unleased and say so', async () => {
    const store = await fresh('conc_limit');
    const tasks = await admitAll(store, 'acme', 2, 5);
    const first = await claimAt(store, 'w1', T0 + 1);
    expect(first.map((r) => r.taskId)).toEqual([tasks[0]!.taskId, tasks[1]!.taskId]);
    // Another claimer finds the key full.
    expect(await claimAt(store, 'w2', T0 + 2)).toEqual([]);
    for (const task of tasks.slice(2)) {
      const now = await read(store, task);
      expect(now).toMatchObject({ status: 'working', leaseOwner: null, attempt: 0 });
      expect(now.statusMessage).toBe('waiting for a concurrency slot (key "acme", 2 of 2 running)');
    }
    // The message is written once, not on every look.
    const version = (await read(store, tasks[2]!)).version;
    await claimAt(store, 'w3', T0 + 3);
    expect((await read(store, tasks[2]!)).version).toBe(version);
  });

  it('frees a slot when a run ends or gives its lease back, and clears the waiting message of the task it starts', async () => {
    const store = await fresh('conc_release');
    const tasks = await admitAll(store, 'acme', 2, 5);
    const [a, b] = await claimAt(store, 'w1', T0 + 1);
    await claimAt(store, 'w1', T0 + 2);
    expect(await store.release({ fence: fenceOf(a!), now: T0 + 3, correlationId: 'rel' })).toBe(true);
    // Exactly one slot was freed.
    const next = await claimAt(store, 'w2', T0 + 4);
    expect(next).toHaveLength(1);
    const ended = await store.transition({
      taskId: b!.taskId,
      authKey: b!.authKey,
      write: { status: 'completed', expectedVersion: b!.version, result: ok },
      correlationId: 'end',
      now: T0 + 5,
    });
    expect(ended.record?.status).toBe('completed');
    const after = await claimAt(store, 'w2', T0 + 6);
    expect(after).toHaveLength(1);
    expect(tasks.slice(2).map((t) => t.taskId)).toContain(after[0]!.taskId);
    expect(after[0]!.statusMessage).toBeNull();
    expect(await claimAt(store, 'w2', T0 + 7)).toEqual([]);
  });

  it('counts each key on its own, and leaves tasks without a key unlimited', async () => {
    const store = await fresh('conc_keys');
    const acme = await admitAll(store, 'acme', 1, 2);
    const beta = await admitAll(store, 'beta', 1, 2);
    const free: TaskRecord[] = [];
    for (let i = 0; i < 3; i++) free.push((await store.admit(admission({ request: request({ month: `free-${i}` }) }))).record!);
    const claimed = (await claimAt(store, 'w1', T0 + 1)).map((r) => r.taskId).sort();
    expect(claimed).toEqual([acme[0]!.taskId, beta[0]!.taskId, ...free.map((r) => r.taskId)].sort());
  });

  it('holds no slot for a task that sleeps; a lease run out holds none either', async () => {
    const store = await fresh('conc_sleep');
    const tasks = await admitAll(store, 'acme', 1, 3);
    const [held] = await claimAt(store, 'w1', T0 + 1);
    expect(held!.taskId).toBe(tasks[0]!.taskId);
    expect(await claimAt(store, 'w1', T0 + 2)).toEqual([]);
    const nap: StepWrite = { position: 0, name: 'nap', kind: 'sleep', status: 'sleeping', attempts: 0, wakeAt: T0 + HOUR / 2, startedAt: T0 + 3 };
    const suspend = { wakeAt: T0 + HOUR / 2, statusMessage: 'sleeping' };
    const slept = await store.recordStep({ fence: fenceOf(held!), step: nap, maxStepBytes: 1000, now: T0 + 3, correlationId: 'nap', suspend });
    expect(slept).toMatchObject({ decision: 'APPLY_STEP', record: { leaseOwner: null } });
    const [second] = await claimAt(store, 'w1', T0 + 4);
    expect(second?.taskId).toBe(tasks[1]!.taskId);
    // The second run's lease runs out: the third task (or the second again) may run, one at a time.
    const later = await claimAt(store, 'w2', T0 + 4 + LEASE + 1, 10);
    expect(later).toHaveLength(1);
  });

  it.runIf(harness.name !== 'memory')('never runs more than the limit when claimers race on separate connections', async () => {
    const handles = await freshMany('conc_race', 8);
    const store = handles[0]!;
    const limit = 3;
    for (const key of ['acme', 'beta']) await admitAll(store, key, limit, 12);
    // Rounds of claims in parallel, each claimer asking for more than the limit; between rounds
    // some runs end, freeing slots for the next round.
    const running = new Map<string, TaskRecord>();
    for (let round = 0; round < 6; round++) {
      const now = T0 + 10 + round * 10;
      const claims = await Promise.all(handles.map((h, i) => claimAt(h, `w${i}`, now, 4)));
      const ofKey = (key: string) => [...running.values()].filter((r) => slotOf(r.request)?.key === key).length;
      const take = (records: readonly TaskRecord[]) => {
        for (const record of records) {
          expect(running.has(record.taskId)).toBe(false);
          running.set(record.taskId, record);
        }
      };
      take(claims.flat());
      // Never more than the limit. A walk that finds a key's lock taken leaves its tasks to the
      // next look: one claimer alone then fills each key exactly (12 tasks per key keep it busy).
      for (const key of ['acme', 'beta']) expect(ofKey(key)).toBeLessThanOrEqual(limit);
      take(await claimAt(store, 'settle', now + 1, 10));
      for (const key of ['acme', 'beta']) expect(ofKey(key)).toBe(limit);
      // End one run of each key.
      for (const key of ['acme', 'beta']) {
        const one = [...running.values()].find((r) => slotOf(r.request)?.key === key);
        if (one === undefined) continue;
        await store.transition({
          taskId: one.taskId,
          authKey: one.authKey,
          write: { status: 'completed', expectedVersion: one.version, result: ok },
          correlationId: 'end',
          now: now + 5,
        });
        running.delete(one.taskId);
      }
    }
  });
});
