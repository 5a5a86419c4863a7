import { describe, expect, it } from 'vitest';
import { ExpirySweeper } from '../../src/service/expiry-sweeper.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { T0, record } from '../support/records.js';
import { until } from '../support/until.js';

describe('ExpirySweeper', () => {
  it('deletes every expired record in bounded batches and leaves live ones', async () => {
    const store = new MemoryStore();
    await store.seed([
      ...Array.from({ length: 23 }, (_, i) => record({ taskId: `old${i}`, expiresAt: T0 - 1 - i })),
      record({ taskId: 'live', expiresAt: T0 + 1 }),
    ]);
    const calls: number[] = [];
    const counting = Object.assign(Object.create(store) as MemoryStore, {
      sweepExpired: async (input: { now: number; limit: number; retentionMs: number }) => {
        const out = await store.sweepExpired(input);
        calls.push(out.tasks);
        return out;
      },
    });
    const sweeper = new ExpirySweeper(counting, () => T0, { batchSize: 5, retentionMs: 0 });
    expect(await sweeper.sweepOnce()).toEqual({ tasks: 23, auditRows: 0 });
    expect(calls).toEqual([5, 5, 5, 5, 3]);
    expect((await store.get({ authKey: 'tenant-a/alice', taskId: 'live', now: T0 })).decision).toBe('FOUND');
    expect(await sweeper.sweepOnce()).toEqual({ tasks: 0, auditRows: 0 });
  });

  it('keeps expired and finished tasks for the retention period (default 7 days), then removes them', async () => {
    const DAY = 24 * 3_600_000;
    const store = new MemoryStore();
    await store.seed([
      record({ taskId: 'expired', expiresAt: T0 - 1 }),
      record({ taskId: 'done', status: 'completed', version: 2, expiresAt: null, ttl: null, lastUpdatedAt: T0 }),
      record({ taskId: 'running', expiresAt: null, ttl: null }),
    ]);
    let now = T0;
    const sweeper = new ExpirySweeper(store, () => now);
    expect(await sweeper.sweepOnce()).toEqual({ tasks: 0, auditRows: 0 });
    now = T0 + 7 * DAY - 1;
    expect((await sweeper.sweepOnce()).tasks).toBe(1);
    now = T0 + 7 * DAY;
    expect((await sweeper.sweepOnce()).tasks).toBe(1);
    now = T0 + 365 * DAY;
    expect((await sweeper.sweepOnce()).tasks).toBe(0);
    expect((await store.get({ authKey: 'tenant-a/alice', taskId: 'running', now })).decision).toBe('FOUND');
    expect(() => new ExpirySweeper(store, () => now, { retentionMs: -1 })).toThrow(/retentionMs/);
  });

  it('stops after maxBatches and sweeps on its interval', async () => {
    const store = new MemoryStore();
    await store.seed(Array.from({ length: 10 }, (_, i) => record({ taskId: `old${i}`, expiresAt: T0 - 1 })));
    const sweeper = new ExpirySweeper(store, () => T0, { batchSize: 2, maxBatches: 2, intervalMs: 20, retentionMs: 0 });
    expect((await sweeper.sweepOnce()).tasks).toBe(4);
    sweeper.start();
    // The rest goes on the sweeper's own intervals, however many it takes on a busy machine.
    await until(async () => ((await store.list({ authKey: 'tenant-a/alice', now: T0 - 10, after: null, limit: 100 })).records.length === 0 ? true : undefined));
    await sweeper.stop();
  });

  it('runs the input deadline pass on its own timer (0: never), and stop() waits for a pass in flight', async () => {
    const store = new MemoryStore();
    let calls = 0;
    let finish: () => void = () => undefined;
    const slow = Object.assign(Object.create(store) as MemoryStore, {
      failOverdueInputs: async () => {
        calls++;
        await new Promise<void>((resolve) => (finish = resolve));
        return [];
      },
    });
    const off = new ExpirySweeper(slow, () => T0, { intervalMs: 0, inputDeadlineIntervalMs: 0 });
    off.start();
    await new Promise((r) => setTimeout(r, 60));
    await off.stop();
    expect(calls).toBe(0);
    const sweeper = new ExpirySweeper(slow, () => T0, { intervalMs: 0, inputDeadlineIntervalMs: 10 });
    sweeper.start();
    await until(() => (calls === 0 ? undefined : true));
    expect(calls).toBe(1);
    let stopped = false;
    const stopping = sweeper.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    // One pass at a time: the timer skipped while the first was still running.
    expect({ stopped, calls }).toEqual({ stopped: false, calls: 1 });
    finish();
    await stopping;
    expect(stopped).toBe(true);
  });
});
