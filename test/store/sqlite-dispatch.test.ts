import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultDigest } from '../../src/core/digest.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { AdmitInput, ClaimInput, TaskStore } from '../../src/store/types.js';
import { HOUR, T0 } from '../support/records.js';

const A = 'tenant-a/alice';
const abandoned = { content: [{ type: 'text', text: 'abandoned' }], isError: true };

let dir: string;
const open: TaskStore[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-sqlite-dispatch-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await rm(dir, { recursive: true, force: true });
});

async function sqlite(): Promise<SqliteStore> {
  const store = await SqliteStore.open(join(dir, `d-${open.length}.db`));
  open.push(store);
  return store;
}

function admission(i: number, overrides: Partial<AdmitInput> = {}): AdmitInput {
  const request = { method: 'tools/call', params: { name: 'export_ledger', arguments: { i } } };
  return {
    taskId: `t-${String(i).padStart(3, '0')}`,
    authKey: A,
    toolName: 'export_ledger',
    request,
    requestDigest: `d${i}`,
    idempotencyKey: null,
    ttl: HOUR,
    pollInterval: null,
    correlationId: `c${i}`,
    now: T0 + i,
    ...overrides,
  };
}

const claimIn = (owner: string, now: number, extra: Partial<ClaimInput> = {}): ClaimInput => ({
  owner,
  now,
  leaseMs: 1000,
  limit: 10,
  maxAttempts: 5,
  abandonedResult: abandoned,
  correlationId: `claim-${owner}`,
  ...extra,
});

type OutboxRow = { available_at_ms: number; claimed_by: string | null; lease_expires_at_ms: number | null; attempt: number; done_at_ms: number | null };
const outbox = (store: SqliteStore, taskId: string) =>
  store.db.prepare('SELECT available_at_ms, claimed_by, lease_expires_at_ms, attempt, done_at_ms FROM task_outbox WHERE task_id = ?').get(taskId) as OutboxRow;

describe('SQLite dispatch', () => {
  it('keeps the outbox entry in step with the lease through claim, heartbeat, release and finish', async () => {
    const store = await sqlite();
    await store.admit(admission(1));
    expect(outbox(store, 't-001')).toEqual({ available_at_ms: T0 + 1, claimed_by: null, lease_expires_at_ms: null, attempt: 0, done_at_ms: null });
    const [held] = await store.claim(claimIn('w1', T0 + 10));
    expect(outbox(store, 't-001')).toEqual({ available_at_ms: T0 + 1010, claimed_by: 'w1', lease_expires_at_ms: T0 + 1010, attempt: 1, done_at_ms: null });
    const fence = { taskId: 't-001', authKey: A, owner: 'w1', version: held!.version };
    expect(await store.heartbeat({ fence: { ...fence, authKey: 'tenant-b/bob' }, now: T0 + 20, leaseMs: 5000 })).toBe(false);
    expect(await store.heartbeat({ fence: { ...fence, version: String(held!.version) as unknown as number }, now: T0 + 20, leaseMs: 5000 })).toBe(false);
    expect(await store.heartbeat({ fence, now: T0 + 20, leaseMs: 5000 })).toBe(true);
    expect(outbox(store, 't-001')).toMatchObject({ available_at_ms: T0 + 5020, lease_expires_at_ms: T0 + 5020 });
    expect((await store.get({ authKey: A, taskId: 't-001', now: T0 + 20 })).record).toMatchObject({
      version: 2,
      lastUpdatedAt: T0 + 10,
      leaseExpiresAt: T0 + 5020,
    });
    expect(await store.release({ fence, now: T0 + 30, correlationId: 'release' })).toBe(true);
    expect(outbox(store, 't-001')).toMatchObject({ available_at_ms: T0 + 30, lease_expires_at_ms: null });
    const [again] = await store.claim(claimIn('w2', T0 + 40));
    await store.transition({
      taskId: 't-001',
      authKey: A,
      write: { status: 'completed', expectedVersion: again!.version, result: { ok: 1 } },
      correlationId: 'w2',
      now: T0 + 50,
    });
    expect(outbox(store, 't-001')).toMatchObject({ claimed_by: 'w2', attempt: 2, done_at_ms: T0 + 50 });
    expect((await store.auditTrail({ taskId: 't-001' })).map((e) => e.detail ?? e.decision)).toEqual([
      'ACCEPT_TASK',
      'claim w1',
      'release w1',
      'claim w2',
      'APPLY_TRANSITION',
    ]);
  });

  it('ends an exhausted task failed with the digest of the abandoned result and an audit line', async () => {
    const store = await sqlite();
    await store.admit(admission(1));
    await store.claim(claimIn('w1', T0 + 10, { maxAttempts: 1 }));
    expect(await store.claim(claimIn('w2', T0 + 2000, { maxAttempts: 1 }))).toEqual([]);
    const stored = (await store.get({ authKey: A, taskId: 't-001', now: T0 + 2000 })).record!;
    expect(stored).toMatchObject({
      status: 'failed',
      version: 3,
      attempt: 1,
      lastUpdatedAt: T0 + 2000,
      result: abandoned,
      resultDigest: resultDigest(abandoned),
    });
    expect((await store.auditTrail({ taskId: 't-001' })).at(-1)).toEqual({
      at: T0 + 2000,
      surface: 'transition',
      decision: 'APPLY_TRANSITION',
      authKey: A,
      taskId: 't-001',
      correlationId: 'claim-w2',
      status: 'failed',
      version: 3,
      detail: 'abandoned',
    });
    expect(outbox(store, 't-001').done_at_ms).toBe(T0 + 2000);
  });

  it('sweeps expired tasks with their outbox entries (foreign keys on, cascade)', async () => {
    const store = await sqlite();
    for (let i = 0; i < 6; i++) await store.admit(admission(i, { ttl: i < 4 ? 100 : HOUR }));
    await store.claim(claimIn('w1', T0 + 10, { limit: 2 }));
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect((await store.sweepExpired({ now: T0 + 200, limit: 10, retentionMs: 0 })).tasks).toBe(4);
    expect((store.db.prepare('SELECT task_id FROM task_outbox ORDER BY id').all() as Array<{ task_id: string }>).map((r) => r.task_id)).toEqual([
      't-004',
      't-005',
    ]);
    expect(await store.pendingDispatch()).toBe(2);
    expect((await store.claim(claimIn('w2', T0 + 200))).map((r) => r.taskId)).toEqual(['t-004', 't-005']);
  });
});
