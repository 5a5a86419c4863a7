import { expect, it } from 'vitest';
import type { TaskStore } from '../../../src/store/types.js';
import { T0 } from '../../support/records.js';
import { admission, defineStoreSuite } from './store-suite.js';

// A tool name means one tool within one application: two apps on one store may both have a
// `build_report`. A claim names its app; a task of another app, even of a tool of the same name,
// is neither claimed nor touched (no version bump, no attempt, no lease) and stays due.

defineStoreSuite('claims by app', ({ fresh, freshMany }) => {
  const claimFor = (store: TaskStore, owner: string, app: string | undefined, tools: readonly string[] = ['build_report'], now = T0 + 5) =>
    store.claim({
      owner,
      now,
      leaseMs: 60_000,
      limit: 10,
      maxAttempts: 5,
      abandonedResult: null,
      correlationId: `claim-${owner}`,
      tools,
      ...(app === undefined ? {} : { app }),
    });

  it('stores the admitting app and tool digest, and hands them back on every read', async () => {
    const store = await fresh('app_stored');
    const admitted = await store.admit(admission({ toolName: 'build_report', app: 'billing', toolDigest: 'd'.repeat(64) }));
    expect(admitted.record).toMatchObject({ app: 'billing', toolDigest: 'd'.repeat(64) });
    const read = (await store.get({ authKey: admitted.record!.authKey, taskId: admitted.record!.taskId, now: T0 + 1 })).record!;
    expect(read).toMatchObject({ app: 'billing', toolDigest: 'd'.repeat(64) });
    // An admission that names no app is the default app's, with no digest recorded.
    const plain = (await store.admit(admission({ toolName: 'build_report' }))).record!;
    expect(plain).toMatchObject({ app: 'default', toolDigest: null });
  });

  it("never claims or touches another app's task of the same tool name", async () => {
    const store = await fresh('app_claim');
    const billing = (await store.admit(admission({ toolName: 'build_report', app: 'billing' }))).record!;
    const sales = (await store.admit(admission({ toolName: 'build_report', app: 'sales' }))).record!;
    const claimed = await claimFor(store, 'w-sales', 'sales');
    expect(claimed.map((r) => [r.taskId, r.app])).toEqual([[sales.taskId, 'sales']]);
    expect(await claimFor(store, 'w-other', 'reports')).toEqual([]);
    const left = (await store.get({ authKey: billing.authKey, taskId: billing.taskId, now: T0 + 6 })).record!;
    expect(left).toMatchObject({ app: 'billing', version: billing.version, attempt: 0, leaseOwner: null, leaseExpiresAt: null });
    // Its entry is still due at once for a worker of its own app.
    const trail = await store.auditTrail({ taskId: billing.taskId });
    expect(trail.map((line) => line.decision)).toEqual(['ACCEPT_TASK']);
    expect((await claimFor(store, 'w-billing', 'billing', ['build_report'], T0 + 6)).map((r) => r.taskId)).toEqual([billing.taskId]);
  });

  it('claims every app without one, and the app filter goes with the tool filter', async () => {
    const store = await fresh('app_claim_any');
    await store.admit(admission({ toolName: 'build_report', app: 'billing' }));
    const other = (await store.admit(admission({ toolName: 'hash_file', app: 'sales' }))).record!;
    await store.admit(admission({ toolName: 'build_report', app: 'sales' }));
    // App right, tool wrong: nothing of billing's build_report for a claimer of hash_file.
    expect(await claimFor(store, 'w-1', 'billing', ['hash_file'])).toEqual([]);
    expect((await claimFor(store, 'w-2', 'sales', ['hash_file'])).map((r) => r.taskId)).toEqual([other.taskId]);
    expect((await claimFor(store, 'w-3', undefined, ['build_report'])).map((r) => r.app).sort()).toEqual(['billing', 'sales']);
  });

  it('lets concurrent claimers of two apps each take exactly their own tasks', async () => {
    const [one, two] = await freshMany('app_claim_race', 2);
    for (let i = 0; i < 8; i++) await one!.admit(admission({ toolName: 'build_report', app: i % 2 === 0 ? 'billing' : 'sales' }));
    const [forBilling, forSales] = await Promise.all([claimFor(one!, 'wb', 'billing'), claimFor(two!, 'ws', 'sales')]);
    expect(forBilling.map((r) => r.app)).toEqual(['billing', 'billing', 'billing', 'billing']);
    expect(forSales.map((r) => r.app)).toEqual(['sales', 'sales', 'sales', 'sales']);
  });

  it("finds an app's tasks for the operator", async () => {
    const store = await fresh('app_find');
    const billing = (await store.admit(admission({ toolName: 'build_report', app: 'billing' }))).record!;
    await store.admit(admission({ toolName: 'build_report', app: 'sales' }));
    const page = await store.findTasks({ filter: { app: 'billing' }, after: null, limit: 10 });
    expect(page.records.map((r) => [r.taskId, r.app])).toEqual([[billing.taskId, 'billing']]);
    expect((await store.findTasks({ filter: { app: 'none' }, after: null, limit: 10 })).records).toEqual([]);
  });
});
