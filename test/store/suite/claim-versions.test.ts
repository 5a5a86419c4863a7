import { expect, it } from 'vitest';
import { decideVersionGrants, type VersionGrants } from '../../../src/core/version-rules.js';
import type { TaskStore } from '../../../src/store/types.js';
import { T0 } from '../../support/records.js';
import { admission, defineStoreSuite } from './store-suite.js';

// A task records its tool's version at admission and a claim says which versions its worker may
// take: its own, any task without a version, and, when it is the newest live version, those no
// live worker announces. A task of any other version is neither claimed nor touched. Workers
// announce their versions in the store; an announcement not renewed within the silence is gone.

const SILENCE = 30_000;

defineStoreSuite('claims by tool version', ({ fresh, freshMany }) => {
  const claimWith = (store: TaskStore, owner: string, versions: VersionGrants | undefined, now = T0 + 5) =>
    store.claim({
      owner,
      now,
      leaseMs: 60_000,
      limit: 10,
      maxAttempts: 5,
      abandonedResult: null,
      correlationId: `claim-${owner}`,
      tools: ['build'],
      app: 'default',
      ...(versions === undefined ? {} : { versions }),
    });
  const admitAt = async (store: TaskStore, toolVersion: string | null) =>
    (await store.admit(admission({ toolName: 'build', app: 'default', ...(toolVersion === null ? {} : { toolVersion }) }))).record!;
  const grantsOf = async (store: TaskStore, version: string, now: number) =>
    decideVersionGrants(new Map([['build', version]]), await store.liveVersions({ app: 'default', now, silenceMs: SILENCE }), now, SILENCE);
  const announce = (store: TaskStore, workerId: string, version: string, now: number) =>
    store.announceVersions({ app: 'default', workerId, versions: [{ tool: 'build', version }], now, forgetBefore: now - 10 * SILENCE });

  it('stores the version with the task and keeps it through a claim; a task admitted without one has none', async () => {
    const store = await fresh('version_stored');
    const v1 = await admitAt(store, 'v1');
    const none = await admitAt(store, null);
    expect([v1.toolVersion, none.toolVersion]).toEqual(['v1', null]);
    const claimed = await claimWith(store, 'w', undefined);
    expect(claimed.map((r) => [r.taskId, r.toolVersion])).toEqual([
      [v1.taskId, 'v1'],
      [none.taskId, null],
    ]);
    expect((await store.get({ authKey: v1.authKey, taskId: v1.taskId, now: T0 + 6 })).record!.toolVersion).toBe('v1');
  });

  it("leaves a live older version's task to its own workers, and hands it to the newest once they are gone", async () => {
    const store = await fresh('version_claims');
    await announce(store, 'old', 'v1', T0 - 60_000);
    await announce(store, 'new', 'v2', T0);
    await announce(store, 'old', 'v1', T0);
    const old = await admitAt(store, 'v1');
    const fresh2 = await admitAt(store, 'v2');
    const legacy = await admitAt(store, null);
    const orphan = await admitAt(store, 'v0');
    const now = T0 + 5;
    const newGrants = await grantsOf(store, 'v2', now);
    expect(newGrants.get('build')).toEqual({ own: 'v2', newest: true, live: ['v2', 'v1'] });
    // The newest takes its own, the unversioned and the orphaned version's task, never v1's.
    expect((await claimWith(store, 'w-new', newGrants, now)).map((r) => r.taskId).sort()).toEqual([fresh2.taskId, legacy.taskId, orphan.taskId].sort());
    const untouched = (await store.get({ authKey: old.authKey, taskId: old.taskId, now })).record!;
    expect(untouched).toMatchObject({ version: 1, attempt: 0, leaseOwner: null, toolVersion: 'v1' });
    // The old worker, not the newest, takes nothing but its own.
    const oldGrants = await grantsOf(store, 'v1', now);
    expect(oldGrants.get('build')?.newest).toBe(false);
    expect((await claimWith(store, 'w-old', oldGrants, now)).map((r) => r.taskId)).toEqual([old.taskId]);
  });

  it('counts an announcement gone after the silence (by the store’s now) or once withdrawn', async () => {
    const store = await fresh('version_silence');
    await announce(store, 'old', 'v1', T0 - 40_000);
    await announce(store, 'new', 'v2', T0 - 20_000);
    await announce(store, 'old', 'v1', T0);
    await announce(store, 'new', 'v2', T0);
    const old = await admitAt(store, 'v1');
    expect((await store.liveVersions({ now: T0 + 1, silenceMs: SILENCE })).map((a) => [a.workerId, a.version, a.firstSeen, a.lastSeen])).toEqual([
      ['old', 'v1', T0 - 40_000, T0],
      ['new', 'v2', T0 - 20_000, T0],
    ]);
    // The old worker falls silent: the new one renews; past the silence only v2 is live.
    await announce(store, 'new', 'v2', T0 + 20_000);
    const before = T0 + SILENCE - 1;
    expect((await store.liveVersions({ app: 'default', now: before, silenceMs: SILENCE })).map((a) => a.workerId)).toEqual(['old', 'new']);
    expect(await claimWith(store, 'w-new', await grantsOf(store, 'v2', before), before)).toEqual([]);
    const after = T0 + SILENCE;
    expect((await store.liveVersions({ app: 'default', now: after, silenceMs: SILENCE })).map((a) => a.workerId)).toEqual(['new']);
    expect((await claimWith(store, 'w-new', await grantsOf(store, 'v2', after), after)).map((r) => r.taskId)).toEqual([old.taskId]);

    // Withdrawn: gone at once, another app's announcement stays.
    await store.announceVersions({ app: 'billing', workerId: 'b', versions: [{ tool: 'build', version: 'v9' }], now: after, forgetBefore: 0 });
    await store.withdrawVersions({ app: 'default', workerId: 'new' });
    expect((await store.liveVersions({ now: after, silenceMs: SILENCE })).map((a) => [a.app, a.workerId])).toEqual([['billing', 'b']]);
  });

  it('keeps first seen across renewals and forgets rows silent past forgetBefore', async () => {
    const store = await fresh('version_forget');
    await announce(store, 'dead', 'v1', T0 - 400_000);
    await announce(store, 'w', 'v2', T0 - 1000);
    await announce(store, 'w', 'v2', T0);
    // An hour's silence counted as live, to see what is stored.
    const stored = async () => (await store.liveVersions({ now: T0, silenceMs: 3_600_000 })).map((a) => [a.workerId, a.firstSeen, a.lastSeen]);
    expect(await stored()).toEqual([['w', T0 - 1000, T0]]);
  });

  it('does not hold back another version’s task from a concurrent claimer it is for', async () => {
    const [one, two] = await freshMany('version_race', 2);
    await announce(one!, 'a', 'v1', T0 - 1000);
    await announce(one!, 'b', 'v2', T0);
    for (let i = 0; i < 6; i++) await admitAt(one!, i % 2 === 0 ? 'v1' : 'v2');
    const [g1, g2] = await Promise.all([grantsOf(one!, 'v1', T0 + 5), grantsOf(two!, 'v2', T0 + 5)]);
    const [forOne, forTwo] = await Promise.all([claimWith(one!, 'wa', g1), claimWith(two!, 'wb', g2)]);
    expect(forOne.map((r) => r.toolVersion)).toEqual(['v1', 'v1', 'v1']);
    expect(forTwo.map((r) => r.toolVersion)).toEqual(['v2', 'v2', 'v2']);
  });
});
