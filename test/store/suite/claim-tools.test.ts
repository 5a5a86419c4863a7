import { expect, it } from 'vitest';
import type { TaskStore } from '../../../src/store/types.js';
import { T0 } from '../../support/records.js';
import { admission, defineStoreSuite } from './store-suite.js';

// A claim names the tools its worker runs: a task of any other tool is neither claimed nor
// touched (no version bump, no attempt, no lease), and stays due for a worker that knows it.

defineStoreSuite('claims by tool', ({ fresh, freshMany }) => {
  const claimFor = (store: TaskStore, owner: string, tools: readonly string[] | undefined, now = T0 + 5) =>
    store.claim({
      owner,
      now,
      leaseMs: 60_000,
      limit: 10,
      maxAttempts: 5,
      abandonedResult: null,
      correlationId: `claim-${owner}`,
      ...(tools === undefined ? {} : { tools }),
    });

  it('claims only tasks of the named tools and leaves the others untouched', async () => {
    const store = await fresh('claim_tools');
    const ledger = (await store.admit(admission({ toolName: 'export_ledger' }))).record!;
    const hash = (await store.admit(admission({ toolName: 'hash_file' }))).record!;
    expect((await claimFor(store, 'w-hash', ['hash_file'])).map((r) => r.taskId)).toEqual([hash.taskId]);
    expect(await claimFor(store, 'w-none', ['other_tool'])).toEqual([]);
    const left = (await store.get({ authKey: ledger.authKey, taskId: ledger.taskId, now: T0 + 6 })).record!;
    expect(left).toMatchObject({ version: ledger.version, attempt: 0, leaseOwner: null });
    expect(await store.pendingDispatch()).toBe(2);
    // The worker that knows the tool still finds it at once.
    expect((await claimFor(store, 'w-ledger', ['export_ledger', 'lookup'])).map((r) => r.taskId)).toEqual([ledger.taskId]);
  });

  it('claims every tool without a filter, and nothing with an empty one', async () => {
    const store = await fresh('claim_tools_all');
    await store.admit(admission({ toolName: 'export_ledger' }));
    await store.admit(admission({ toolName: 'hash_file' }));
    expect(await claimFor(store, 'w-empty', [])).toEqual([]);
    expect(await claimFor(store, 'w-all', undefined)).toHaveLength(2);
  });

  it('does not hold back a task of another tool from a concurrent claimer that knows it', async () => {
    const [one, two] = await freshMany('claim_tools_race', 2);
    const admitted = [];
    for (let i = 0; i < 6; i++) admitted.push((await one!.admit(admission({ toolName: i % 2 === 0 ? 'a_tool' : 'b_tool' }))).record!);
    const [forA, forB] = await Promise.all([claimFor(one!, 'wa', ['a_tool']), claimFor(two!, 'wb', ['b_tool'])]);
    expect(forA.map((r) => r.toolName)).toEqual(['a_tool', 'a_tool', 'a_tool']);
    expect(forB.map((r) => r.toolName)).toEqual(['b_tool', 'b_tool', 'b_tool']);
  });
});
