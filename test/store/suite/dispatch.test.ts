import { expect, it } from 'vitest';
import type { TaskRecord } from '../../../src/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory-store.js';
import type { ClaimInput, Fence, TaskStore } from '../../../src/store/types.js';
import { HOUR, PG_NOW, T0, pgAdmission } from '../../support/records.js';
import { A, admission, defineStoreSuite, ok } from './store-suite.js';
import { until } from '../../support/until.js';

// Dispatch: claims, leases, fences and the outbox walk. The walk of every store is compared
// with the memory store's, which decides each entry with the core's decideDispatch directly.

defineStoreSuite('dispatch', ({ harness, fresh, freshMany }) => {
  const abandoned = { content: [{ type: 'text', text: 'abandoned' }], isError: true };
  const claimIn = (store: TaskStore, owner: string, now: number, extra: { limit?: number; leaseMs?: number; maxAttempts?: number } = {}) =>
    store.claim({
      owner,
      now,
      leaseMs: extra.leaseMs ?? 1000,
      limit: extra.limit ?? 10,
      maxAttempts: extra.maxAttempts ?? 5,
      abandonedResult: abandoned,
      correlationId: `claim-${owner}`,
    });
  const fenceOf = (r: { taskId: string; authKey: string; leaseOwner: string | null; version: number }) => ({
    taskId: r.taskId,
    authKey: r.authKey,
    owner: r.leaseOwner!,
    version: r.version,
  });

  it('claims an admitted task once, bumping the version and counting the attempt', async () => {
    const store = await fresh('claim');
    const admitted = (await store.admit(admission())).record!;
    expect(await store.pendingDispatch()).toBe(1);
    const [claimed, ...rest] = await claimIn(store, 'w1', T0 + 5);
    expect(rest).toEqual([]);
    expect(claimed).toMatchObject({
      taskId: admitted.taskId,
      status: 'working',
      version: 2,
      attempt: 1,
      leaseOwner: 'w1',
      leaseExpiresAt: T0 + 1005,
      lastUpdatedAt: T0 + 5,
    });
    expect(await claimIn(store, 'w2', T0 + 6)).toEqual([]);
    const trail = await store.auditTrail({ taskId: admitted.taskId });
    expect(trail.map((e) => e.decision)).toEqual(['ACCEPT_TASK', 'APPLY_TRANSITION']);
    expect(trail[1]).toMatchObject({ surface: 'transition', status: 'working', version: 2 });
  });

  it('lets another worker take over an expired lease and fences the first one off', async () => {
    const store = await fresh('takeover');
    await store.admit(admission());
    const [first] = await claimIn(store, 'w1', T0);
    expect(await store.heartbeat({ fence: fenceOf(first!), now: T0 + 500, leaseMs: 1000 })).toBe(true);
    expect(await claimIn(store, 'w2', T0 + 1400)).toEqual([]);
    const [second] = await claimIn(store, 'w2', T0 + 1500);
    expect(second).toMatchObject({ version: 3, attempt: 2, leaseOwner: 'w2' });
    expect(await store.heartbeat({ fence: fenceOf(first!), now: T0 + 1501, leaseMs: 1000 })).toBe(false);
    const stale = await store.transition({
      taskId: first!.taskId,
      authKey: A,
      write: { status: 'completed', expectedVersion: first!.version, result: ok },
      correlationId: 'w1',
      now: T0 + 1502,
    });
    expect(stale.decision).toBe('BLOCK_STALE_VERSION');
    const won = await store.transition({
      taskId: first!.taskId,
      authKey: A,
      write: { status: 'completed', expectedVersion: second!.version, result: ok },
      correlationId: 'w2',
      now: T0 + 1503,
    });
    expect(won.decision).toBe('APPLY_TRANSITION');
    expect(won.record).toMatchObject({ leaseOwner: null, leaseExpiresAt: null });
    expect(await store.pendingDispatch()).toBe(0);
    expect(await claimIn(store, 'w3', T0 + 99_999)).toEqual([]);
    const claims = (await store.auditTrail({ taskId: first!.taskId })).map((e) => e.detail).filter((d) => /^(claim|takeover) /.test(d ?? ''));
    expect(claims).toEqual(['claim w1', 'takeover w2 (lease of w1 expired)']);
  });

  it('marks a takeover in the claim audit line of each task a walk claims, and only a takeover', async () => {
    const store = await fresh('takeover-lines');
    // t1 leased to w1 until T0 + 1000 and lapsed; t2 leased to w2 and lapsed; t3 fresh, admitted after.
    const one = (await store.admit(admission({ taskId: 't-take-1' }))).record!;
    await claimIn(store, 'w1', T0, { limit: 1 });
    const two = (await store.admit(admission({ taskId: 't-take-2', now: T0 + 1 }))).record!;
    await claimIn(store, 'w2', T0 + 1, { limit: 1 });
    const three = (await store.admit(admission({ taskId: 't-take-3', now: T0 + 2 }))).record!;
    const taken = await claimIn(store, 'w2', T0 + 5000);
    expect(taken.map((r) => r.taskId).sort()).toEqual([one.taskId, two.taskId, three.taskId].sort());
    const claimLine = async (taskId: string) =>
      (await store.auditTrail({ taskId })).filter((e) => e.decision === 'APPLY_TRANSITION').map((e) => [e.detail, e.correlationId, e.version]);
    expect(await claimLine(one.taskId)).toEqual([
      ['claim w1', 'claim-w1', 2],
      ['takeover w2 (lease of w1 expired)', 'claim-w2', 3],
    ]);
    // Its own lapsed lease, claimed again by the same owner, is no takeover.
    expect(await claimLine(two.taskId)).toEqual([
      ['claim w2', 'claim-w2', 2],
      ['claim w2', 'claim-w2', 3],
    ]);
    expect(await claimLine(three.taskId)).toEqual([['claim w2', 'claim-w2', 2]]);
  });

  it('releases a lease for an immediate claim by another worker', async () => {
    const store = await fresh('release');
    await store.admit(admission());
    const [held] = await claimIn(store, 'w1', T0, { leaseMs: 60_000 });
    expect(await store.release({ fence: { ...fenceOf(held!), owner: 'someone-else' }, now: T0 + 1, correlationId: 'release' })).toBe(false);
    expect(await store.release({ fence: fenceOf(held!), now: T0 + 1, correlationId: 'release' })).toBe(true);
    expect(await claimIn(store, 'w2', T0 + 2)).toMatchObject([{ leaseOwner: 'w2', attempt: 2 }]);
    // A claim after a clean release is no takeover.
    expect((await store.auditTrail({ taskId: held!.taskId })).map((e) => e.detail)).toContain('claim w2');
  });

  it('never claims a cancelled, finished or expired task and closes its entry', async () => {
    const store = await fresh('skip');
    const cancelled = (await store.admit(admission())).record!;
    const expired = (await store.admit(admission({ ttl: 10 }))).record!;
    const [running] = await claimIn(store, 'w1', T0);
    expect(running?.taskId).toBe(cancelled.taskId);
    await store.cancel({ authKey: A, taskId: cancelled.taskId, now: T0 + 1, correlationId: 'c' });
    expect(await store.heartbeat({ fence: fenceOf(running!), now: T0 + 2, leaseMs: 1000 })).toBe(false);
    expect(await claimIn(store, 'w2', T0 + 5000)).toEqual([]);
    expect(await store.pendingDispatch()).toBe(0);
    expect((await store.get({ authKey: A, taskId: expired.taskId, now: T0 })).record?.attempt).toBe(1);
  });

  it('ends a task failed once it used up its attempts', async () => {
    const store = await fresh('attempts');
    const admitted = (await store.admit(admission())).record!;
    await claimIn(store, 'w1', T0, { maxAttempts: 2 });
    await claimIn(store, 'w2', T0 + 2000, { maxAttempts: 2 });
    expect(await claimIn(store, 'w3', T0 + 4000, { maxAttempts: 2 })).toEqual([]);
    const stored = (await store.get({ authKey: A, taskId: admitted.taskId, now: T0 + 4000 })).record!;
    expect(stored).toMatchObject({ status: 'failed', attempt: 2, version: 4, result: abandoned, leaseOwner: null });
    expect(await store.pendingDispatch()).toBe(0);
  });

  it('claims at most `limit`, oldest first, and concurrent claimers never share a task', async () => {
    const store = await fresh('claim-many');
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await store.admit(admission({ now: T0 + i }))).record!.taskId);
    const firstTwo = await claimIn(store, 'w0', T0 + 100, { limit: 2 });
    expect(firstTwo.map((r) => r.taskId)).toEqual(ids.slice(0, 2));
    const batches = await Promise.all(Array.from({ length: 8 }, (_, i) => claimIn(store, `w${i + 1}`, T0 + 100, { limit: 3 })));
    const claimed = batches.flat().map((r) => r.taskId);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.sort()).toEqual(ids.slice(2).sort());
  });

  const claimBy = (owner: string, now: number, leaseMs: number, limit = 5): ClaimInput => ({
    owner,
    now,
    leaseMs,
    limit,
    maxAttempts: 5,
    abandonedResult: { error: 'abandoned' },
    correlationId: `claim-${owner}`,
  });
  const fenceOfRecord = (r: TaskRecord): Fence => ({ taskId: r.taskId, authKey: r.authKey, owner: r.leaseOwner ?? '', version: r.version });

  it('walks the outbox as decideDispatch says: pages, skips, deferrals, closings, abandons', async () => {
    const [store] = await freshMany('walk', 1);
    const ids = Array.from({ length: 14 }, (_, i) => `w-${String(i).padStart(2, '0')}`);
    // The same script on this store and on a memory store; every answer is compared.
    const run = async (target: TaskStore): Promise<unknown[]> => {
      const seen: unknown[] = [];
      const claim = async (owner: string, now: number, limit: number, maxAttempts = 5) => {
        const got = await target.claim({ ...claimBy(owner, now, 1000, limit), maxAttempts });
        seen.push(got, await target.pendingDispatch());
        return got;
      };
      for (const [i, taskId] of ids.entries()) await target.admit(pgAdmission({ taskId, authKey: 'walk', now: PG_NOW + (i % 4), ttl: i === 3 ? 50 : null }));
      const write = (taskId: string, status: string, now: number) =>
        target.transition({ taskId, authKey: 'walk', write: { status, expectedVersion: 1 }, correlationId: 'x', now });
      seen.push(await write(ids[0]!, 'input_required', PG_NOW + 10), await write(ids[5]!, 'completed', PG_NOW + 10));
      seen.push(await target.cancel({ authKey: 'walk', taskId: ids[6]!, now: PG_NOW + 10, correlationId: 'x' }));
      const first = await claim('w0', PG_NOW + 20, 2);
      await claim('w1', PG_NOW + 100, 3);
      seen.push(
        await target.heartbeat({ fence: fenceOfRecord(first[0]!), now: PG_NOW + 900, leaseMs: 1000 }),
        await target.release({ fence: fenceOfRecord(first[1]!), now: PG_NOW + 900, correlationId: 'release' }),
      );
      await claim('w2', PG_NOW + 1200, 4, 1);
      await claim('w3', PG_NOW + 1200, 3);
      await claim('w4', PG_NOW + 2500, 20, 2);
      for (const taskId of ids) seen.push(await target.get({ authKey: 'walk', taskId, now: PG_NOW + 2500 }), await target.auditTrail({ taskId }));
      return seen;
    };
    expect(await run(store!)).toEqual(await run(new MemoryStore()));
  });

  it('walks past pages of entries it must leave open, and decides on each entry once', async () => {
    // limit 2 reads pages of 8 on SQLite: one claimable task, then nineteen waiting for input, so
    // the walk goes on for three pages; with leaseMs 0 the claimed entry is due again after all.
    const abandonedResult = { content: [{ type: 'text', text: 'abandoned' }], isError: true };
    const claimIn2 = (owner: string, now: number, extra: Partial<ClaimInput> = {}): ClaimInput => ({
      owner,
      now,
      leaseMs: 1000,
      limit: 10,
      maxAttempts: 5,
      abandonedResult,
      correlationId: `claim-${owner}`,
      ...extra,
    });
    const run = async (target: TaskStore) => {
      for (let i = 0; i < 20; i++) {
        const req = { method: 'tools/call', params: { name: 'export_ledger', arguments: { i } } };
        const { record } = await target.admit({
          taskId: `t-${String(i).padStart(3, '0')}`,
          authKey: A,
          toolName: 'export_ledger',
          request: req,
          requestDigest: `d${i}`,
          idempotencyKey: null,
          ttl: HOUR,
          pollInterval: null,
          correlationId: `c${i}`,
          now: T0 + i,
        });
        if (i !== 0)
          await target.transition({
            taskId: record!.taskId,
            authKey: A,
            write: { status: 'input_required', expectedVersion: 1 },
            correlationId: 'x',
            now: T0 + 30,
          });
      }
      const first = await target.claim(claimIn2('w1', T0 + 100, { limit: 2, leaseMs: 0 }));
      const second = await target.claim(claimIn2('w2', T0 + 100, { limit: 5 }));
      return {
        first: first.map((r) => [r.taskId, r.attempt]),
        second: second.map((r) => [r.taskId, r.attempt]),
        pending: await target.pendingDispatch(),
      };
    };
    const expected = await run(new MemoryStore());
    expect(expected).toEqual({ first: [['t-000', 1]], second: [['t-000', 2]], pending: 20 });
    expect(await run(await fresh('walk-pages'))).toEqual(expected);
  });

  it.skipIf(harness.name === 'memory')('a write through one handle wakes a listener on another with the task id and version', async () => {
    const [writer, reader] = await freshMany('listen', 2);
    expect(reader!.supports.listenNotify).toBe(true);
    const seen: [string | null, number | undefined][] = [];
    const errors: Error[] = [];
    const stop = await reader!.listen(
      (taskId, version) => seen.push([taskId, version]),
      (e) => errors.push(e),
    );
    try {
      const admitted = (await writer!.admit(admission())).record!;
      const done = await writer!.transition({
        taskId: admitted.taskId,
        authKey: A,
        write: { status: 'completed', expectedVersion: 1, result: ok },
        correlationId: 'c',
        now: T0,
      });
      const waitFor = async (n: number) => {
        await until(() => (seen.filter(([id]) => id === admitted.taskId).length < n ? undefined : true));
      };
      await waitFor(2);
      expect(seen.filter(([id]) => id === admitted.taskId)).toEqual([
        [admitted.taskId, 1],
        [admitted.taskId, done.record!.version],
      ]);
      expect(errors).toEqual([]);
    } finally {
      await stop();
    }
  });
});
