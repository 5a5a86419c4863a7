import { afterEach, describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import type { StepWrite } from '../../src/core/step-rules.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { Fence, RecordStepInput } from '../../src/store/types.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { pgAdmission, PG_NOW } from '../support/records.js';
import { holdWriteSlot } from '../support/write-slot.js';

// Fresh steps of concurrent runs travel in the PostgreSQL store's write batches: each keeps its
// own decision and its own audit line, whatever the steps beside it in the batch are.

const open: PostgresStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

const AUTH = 'acme/steps';
const step = (position: number, name: string): StepWrite => ({
  position,
  name,
  kind: 'do',
  status: 'completed',
  attempts: 1,
  value: { position },
  startedAt: PG_NOW + 1,
});

async function claimedTasks(store: PostgresStore, n: number): Promise<Fence[]> {
  for (let i = 0; i < n; i++) await store.admit(pgAdmission({ authKey: AUTH }));
  const held = await store.claim({
    owner: 'w1',
    now: PG_NOW + 1,
    leaseMs: 60_000,
    limit: n,
    maxAttempts: 5,
    abandonedResult: { content: [] },
    correlationId: 'claim',
  });
  expect(held).toHaveLength(n);
  return held.map((r) => ({ taskId: r.taskId, authKey: r.authKey, owner: 'w1', version: r.version }));
}

describe('PostgreSQL steps in a write batch', () => {
  it('each step of one batch gets its own decision and audit line: applied, stale fence, journal bound, name reused, unstorable, a version beyond int4', async () => {
    const store = await PostgresStore.open(await freshPostgresUrl('step_batch'), { poolSize: 6, writeBatch: { inFlight: 1 } });
    open.push(store);
    const [a, b, c, d] = await claimedTasks(store, 4);
    const record = (fence: Fence, write: StepWrite, extra: Partial<RecordStepInput> = {}) =>
      store.recordStep({ fence, step: write, maxStepBytes: 1000, now: PG_NOW + 2, correlationId: `step-${fence.taskId}-${write.position}`, ...extra });
    // The journal of c already names `charge` at position 0.
    expect((await record(c!, step(0, 'charge'))).decision).toBe('APPLY_STEP');
    const slot = await holdWriteSlot(store);
    const writes = Promise.allSettled([
      record(a!, step(0, 'first')),
      record({ ...b!, version: b!.version - 1 }, step(0, 'stale')),
      record(c!, step(1, 'charge')),
      record(d!, step(0, 'over'), { maxJournalSteps: 0 }),
      record(d!, step(1, 'bad\u0000name')),
      record(a!, step(1, 'second')),
      record({ ...b!, version: 2 ** 40 }, step(0, 'beyond')),
    ]);
    await slot.release();
    const settled = await writes;
    const decisions = settled.map((s) =>
      s.status === 'fulfilled' ? s.value.decision : isTasklatchError(s.reason, 'INVALID_INPUT') ? 'INVALID_INPUT' : String(s.reason),
    );
    expect(decisions).toEqual([
      'APPLY_STEP',
      'BLOCK_STALE_VERSION',
      'BLOCK_STEP_ORDER',
      'BLOCK_JOURNAL_LIMIT',
      'INVALID_INPUT',
      'APPLY_STEP',
      'BLOCK_STALE_VERSION',
    ]);
    // An applied step leaves the task as the fence holds it.
    const applied = settled[0] as PromiseFulfilledResult<{ record: { version: number; leaseOwner: string | null } | null }>;
    expect(applied.value.record).toMatchObject({ version: a!.version, leaseOwner: 'w1' });

    // Both steps of a went in the one batch: one transaction wrote them.
    const writers = await store.pool.query<{ xid: string }>('SELECT DISTINCT xmin::text AS xid FROM task_steps WHERE task_id = $1', [a!.taskId]);
    expect(writers.rows).toHaveLength(1);

    const names = async (fence: Fence) => (await store.steps({ authKey: AUTH, taskId: fence.taskId, now: PG_NOW + 3 })).steps?.map((s) => s.name);
    expect(await names(a!)).toEqual(['first', 'second']);
    expect(await names(b!)).toEqual([]);
    expect(await names(c!)).toEqual(['charge']);
    expect(await names(d!)).toEqual([]);
    const lines = async (fence: Fence) => (await store.auditTrail({ taskId: fence.taskId })).filter((l) => l.surface === 'step').map((l) => l.decision);
    expect(await lines(a!)).toEqual(['APPLY_STEP', 'APPLY_STEP']);
    expect(await lines(b!)).toEqual(['BLOCK_STALE_VERSION', 'BLOCK_STALE_VERSION']);
    expect(await lines(c!)).toEqual(['APPLY_STEP', 'BLOCK_STEP_ORDER']);
    expect(await lines(d!)).toEqual(['BLOCK_JOURNAL_LIMIT']);
  });
});
