import { describe, expect, it } from 'vitest';
import { ExpirySweeper } from '../../src/service/expiry-sweeper.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { T0, record } from '../support/records.js';

describe('ExpirySweeper', () => {
  it('deletes every expired record in bounded batches and leaves live ones', async () => {
    const store = new MemoryStore();
    await store.seed([
      ...Array.from({ length: 23 }, (_, i) => record({ taskId: `old${i}`, expiresAt: T0 - 1 - i })),
      record({ taskId: 'live', expiresAt: T0 + 1 }),
    ]);
    const calls: number[] = [];
    const counting = Object.assign(Object.create(store) as MemoryStore, {
      sweepExpired: async (input: { now: number; limit: number }) => {
        const n = await store.sweepExpired(input);
        calls.push(n);
        return n;
      },
    });
    const sweeper = new ExpirySweeper(counting, () => T0, { batchSize: 5 });
    expect(await sweeper.sweepOnce()).toBe(23);
    expect(calls).toEqual([5, 5, 5, 5, 3]);
    expect((await store.get({ authKey: 'tenant-a/alice', taskId: 'live', now: T0 })).decision).toBe('FOUND');
    expect(await sweeper.sweepOnce()).toBe(0);
  });

  it('stops after maxBatches and sweeps on its interval', async () => {
    const store = new MemoryStore();
    await store.seed(Array.from({ length: 10 }, (_, i) => record({ taskId: `old${i}`, expiresAt: T0 - 1 })));
    const sweeper = new ExpirySweeper(store, () => T0, { batchSize: 2, maxBatches: 2, intervalMs: 20 });
    expect(await sweeper.sweepOnce()).toBe(4);
    sweeper.start();
    await new Promise((r) => setTimeout(r, 150));
    await sweeper.stop();
    expect(await store.list({ authKey: 'tenant-a/alice', now: T0 - 10, after: null, limit: 100 })).toMatchObject({ records: [] });
  });
});
