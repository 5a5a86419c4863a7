import { describe, expect, it } from 'vitest';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { openGuard } from '../../src/service/guard.js';
import { timeOrderedTaskId } from '../../src/service/task-ids.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { ALL_CAPS } from '../support/records.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const T = Date.parse('2026-12-06T10:00:00.000Z');

/** The 74 bits after the time, version and variant, as a string of 0 and 1. */
function randomBits(id: string): string {
  const hex = id.replace(/-/g, '');
  const bits = [...hex].map((h) => parseInt(h, 16).toString(2).padStart(4, '0')).join('');
  return bits.slice(52, 64) + bits.slice(66);
}

describe('task ids', () => {
  it('are UUIDs of version 7: the time in milliseconds first, then 74 random bits', () => {
    const id = timeOrderedTaskId(T);
    expect(id).toMatch(V7);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(T);
    expect(randomBits(id)).toHaveLength(74);
  });

  it('sort by their time, and within one millisecond share nothing but it', () => {
    const earlier = Array.from({ length: 50 }, () => timeOrderedTaskId(T));
    const later = Array.from({ length: 50 }, () => timeOrderedTaskId(T + 1));
    expect(Math.max(...earlier.map((a) => later.filter((b) => b <= a).length))).toBe(0);
    const same = Array.from({ length: 20_000 }, () => timeOrderedTaskId(T));
    expect(new Set(same).size).toBe(same.length);
    // Every random bit takes both values, each about half the time: no counter, no constant.
    const ones = new Array<number>(74).fill(0);
    for (const id of same) [...randomBits(id)].forEach((b, i) => (ones[i]! += b === '1' ? 1 : 0));
    for (const n of ones) expect(Math.abs(n / same.length - 0.5)).toBeLessThan(0.03);
  });

  it('are what a guard gives its tasks by default, stamped with the wall clock', async () => {
    const guard = openGuard({ store: new MemoryStore(), capabilities: ALL_CAPS });
    const before = Date.now();
    const created = await createTask(guard, {
      auth: 'acme/alice',
      tool: { name: 'export_ledger', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'export_ledger', arguments: {}, task: {} } },
    });
    const id = created.record!.taskId;
    expect(id).toMatch(V7);
    const at = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });
});
