import { expect } from 'vitest';
import type { TaskStore } from '../../src/store/types.js';
import { pgAdmission as admission, PG_NOW as NOW } from './records.js';

// Whole tasks on a store through its own calls (admit, claim, complete, get), for tests of what
// carries them rather than of the rules: they expect each call to succeed.

/** Admit, claim and complete one task: the records its writes answered with, and the record read back. */
export async function oneTask(store: TaskStore) {
  const input = admission();
  expect((await store.admit(input)).decision).toBe('ACCEPT_TASK');
  const [claimed] = await store.claim({ owner: 'w1', now: NOW, leaseMs: 30_000, limit: 1, maxAttempts: 3, abandonedResult: null, correlationId: 'c1' });
  expect(claimed?.taskId).toBe(input.taskId);
  const write = { status: 'completed' as const, expectedVersion: claimed!.version, result: { content: [{ type: 'text', text: 'ok' }], isError: false } };
  const done = await store.transition({ taskId: input.taskId, authKey: input.authKey, write, correlationId: 'c2', now: NOW + 1 });
  expect(done.decision).toBe('APPLY_TRANSITION');
  const read = await store.get({ taskId: input.taskId, authKey: input.authKey, now: NOW + 2, correlationId: 'c3' } as never);
  return { claimed: claimed!, done: done.record!, read: read.record! };
}

/**
 * `n` tasks at once on `store`: admitted together, claimed in one walk, completed together, so
 * that their writes share batches; each call must succeed.
 */
export async function tasksAtOnce(store: TaskStore, n: number): Promise<void> {
  const inputs = Array.from({ length: n }, () => admission());
  for (const a of await Promise.all(inputs.map((input) => store.admit(input)))) expect(a.decision).toBe('ACCEPT_TASK');
  const claimed = await store.claim({ owner: 'w1', now: NOW, leaseMs: 30_000, limit: n, maxAttempts: 3, abandonedResult: null, correlationId: 'c1' });
  expect(claimed.map((c) => c.taskId).sort()).toEqual(inputs.map((i) => i.taskId).sort());
  const done = await Promise.all(
    claimed.map((c) =>
      store.transition({
        taskId: c.taskId,
        authKey: c.authKey,
        write: { status: 'completed', expectedVersion: c.version, result: { content: [], isError: false } },
        correlationId: 'c2',
        now: NOW + 1,
      }),
    ),
  );
  expect(done.map((d) => d.decision)).toEqual(claimed.map(() => 'APPLY_TRANSITION'));
  expect(done.map((d) => d.record?.status)).toEqual(claimed.map(() => 'completed'));
}
