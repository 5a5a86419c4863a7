import { afterEach, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../src/core/types.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AdmitInput } from '../../src/store/types.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { PG_NOW, pgAdmission } from '../support/records.js';

const open: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const LEASE_MS = 30_000;
const CLAIM = { owner: 'w1', leaseMs: LEASE_MS, maxAttempts: 3, correlationId: 'claim-corr' };

async function storeAt(label: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(await freshPostgresUrl(label), { poolSize: 4 });
  open.push(store);
  return store;
}

/** What a task leaves in the store: its row, its outbox entries, its audit trail (ids left out). */
async function footprint(store: PostgresStore, taskId: string) {
  const task = (await store.pool.query('SELECT * FROM tasks WHERE task_id = $1', [taskId])).rows[0] as Record<string, unknown>;
  const outbox = (
    await store.pool.query<Record<string, unknown>>(
      'SELECT task_id, app, created_at_ms, available_at_ms, claimed_by, lease_expires_at_ms, attempt, done_at_ms FROM task_outbox WHERE task_id = $1 ORDER BY id',
      [taskId],
    )
  ).rows;
  const trail = await store.auditTrail({ taskId });
  return { task, outbox, trail };
}

function admitted(out: Awaited<ReturnType<PostgresStore['admit']>>): { record: TaskRecord; claimed: TaskRecord | null | undefined } {
  if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
  return { record: out.record, claimed: out.claimed };
}

describe('PostgreSQL admission with its claim in one statement', () => {
  it('leaves what an admission and then a claim leave, and answers the admission as admitted', async () => {
    const folded = await storeAt('admit_claimed');
    const apart = await storeAt('admit_then_claim');
    const input: AdmitInput = pgAdmission({ taskId: 'same-task', idempotencyKey: 'k1', maxActive: 100, maxStored: 1000 });

    const one = admitted(await folded.admit(Object.assign({}, input, { claim: CLAIM })));
    const plain = admitted(await apart.admit(input));
    const [claimedApart] = await apart.claim({
      owner: CLAIM.owner,
      now: PG_NOW,
      leaseMs: LEASE_MS,
      limit: 1,
      maxAttempts: CLAIM.maxAttempts,
      abandonedResult: null,
      correlationId: CLAIM.correlationId,
    });

    // The admission's answer is the record as admitted: version 1, no attempt, no lease.
    expect(one.record).toEqual(plain.record);
    expect(one.record).toMatchObject({ version: 1, attempt: 0, leaseOwner: null, leaseExpiresAt: null });
    // The claimed record is what the claim makes of it.
    expect(one.claimed).toEqual(claimedApart);
    expect(one.claimed).toMatchObject({ version: 2, attempt: 1, leaseOwner: 'w1', leaseExpiresAt: PG_NOW + LEASE_MS });

    const a = await footprint(folded, 'same-task');
    const b = await footprint(apart, 'same-task');
    expect(a.task).toEqual(b.task);
    expect(a.outbox).toEqual(b.outbox);
    expect(a.outbox).toHaveLength(1);
    expect(a.outbox[0]).toMatchObject({ claimed_by: 'w1', attempt: 1, done_at_ms: null });
    expect(Number(a.outbox[0]?.available_at_ms)).toBe(PG_NOW + LEASE_MS);
    // The same trail, line for line: the admission, then the claim's transition.
    expect(a.trail).toEqual(b.trail);
    expect(a.trail.map((l) => [l.surface, l.decision, l.status, l.version, l.correlationId, l.detail])).toEqual([
      ['create', 'ACCEPT_TASK', null, null, 'corr', undefined],
      ['transition', 'APPLY_TRANSITION', 'working', 2, 'claim-corr', 'claim w1'],
    ]);
  });

  it('a replay of the key is answered with the stored task and claims nothing; a caller at its bound is refused and nothing is written', async () => {
    const store = await storeAt('admit_claimed_replay');
    const first = admitted(await store.admit(pgAdmission({ taskId: 'keyed', idempotencyKey: 'k', maxActive: 1, claim: CLAIM })));
    expect(first.claimed?.version).toBe(2);
    const replay = await store.admit(pgAdmission({ taskId: 'other', idempotencyKey: 'k', maxActive: 1, claim: Object.assign({}, CLAIM, { owner: 'w2' }) }));
    expect(replay.decision).toBe('REPLAY_TASK');
    expect(replay.record?.taskId).toBe('keyed');
    expect(replay.record?.leaseOwner).toBe('w1');
    // The active limit (1) is taken by the first task: refused, nothing inserted, nothing claimed.
    const refused = await store.admit(pgAdmission({ taskId: 'over', maxActive: 1, claim: CLAIM }));
    expect(refused.decision).toBe('BLOCK_TASK_LIMIT');
    const rows = (await store.pool.query<{ task_id: string }>('SELECT task_id FROM tasks ORDER BY task_id')).rows.map((r) => r.task_id);
    expect(rows).toEqual(['keyed']);
    const outbox = (await store.pool.query('SELECT task_id, claimed_by FROM task_outbox')).rows;
    expect(outbox).toEqual([{ task_id: 'keyed', claimed_by: 'w1' }]);
  });

  it('answers each admission with the record a read of the stored task gives, the request as jsonb orders its keys', async () => {
    const store = await storeAt('admit_answer');
    // Keys out of jsonb's order (shorter keys first): the answer has them as the store keeps them.
    const request = { method: 'tools/call', params: { name: 'slow', arguments: { zz: 1, a: { yy: 2, b: 3 } }, _meta: { x: 1 } } };
    const stored = async (taskId: string, now = PG_NOW) => {
      const found = await store.get({ authKey: 'tenant-a/alice', taskId, now });
      if (found.decision !== 'FOUND') throw new Error(`expected FOUND, got ${found.decision}`);
      return JSON.stringify(found.record);
    };
    const bare = admitted(await store.admit(pgAdmission({ taskId: 'bare', request })));
    expect(JSON.stringify(bare.record)).toBe(await stored('bare'));
    expect(JSON.stringify(bare.record.request)).toBe(
      '{"method":"tools/call","params":{"name":"slow","_meta":{"x":1},"arguments":{"a":{"b":3,"yy":2},"zz":1}}}',
    );
    const keyed = admitted(await store.admit(pgAdmission({ taskId: 'keyed', request, idempotencyKey: 'k', ttl: 1000, maxActive: 10 })));
    expect(JSON.stringify(keyed.record)).toBe(await stored('keyed'));
    const claimed = admitted(await store.admit(pgAdmission({ taskId: 'claimed', request, claim: CLAIM })));
    expect(JSON.stringify(claimed.claimed)).toBe(await stored('claimed'));
    expect(JSON.stringify(claimed.record.request)).toBe(JSON.stringify(bare.record.request));
    // The key's holder expired: the insert finds the key taken, and the transaction that
    // releases it admits the task.
    const later = PG_NOW + 5000;
    const again = admitted(await store.admit(pgAdmission({ taskId: 'again', request, idempotencyKey: 'k', ttl: 1000, maxActive: 10, now: later })));
    expect(JSON.stringify(again.record)).toBe(await stored('again', later));
  });
});
