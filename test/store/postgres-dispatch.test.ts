import { afterEach, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../src/core/types.js';
import type { ClaimInput, Fence } from '../../src/store/types.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { pgAdmission as admission, PG_NOW as NOW } from '../support/records.js';

// PostgreSQL dispatch under real concurrency: claimers on separate pools and lease takeovers
// racing the first holder. The dispatch behaviour shared with the other stores (the outbox walk
// among it) is in suite/dispatch.test.ts.

const claimBy = (owner: string, now: number, leaseMs: number, limit = 5): ClaimInput => ({
  owner,
  now,
  leaseMs,
  limit,
  maxAttempts: 5,
  abandonedResult: { error: 'abandoned' },
  correlationId: `claim-${owner}`,
});
const fenceOf = (r: TaskRecord): Fence => ({ taskId: r.taskId, authKey: r.authKey, owner: r.leaseOwner ?? '', version: r.version });

describe('PostgresStore dispatch under concurrency', () => {
  // Three stores on one schema: three pools, so claimers meet in the database, not in one pool.
  const stores: PostgresStore[] = [];
  /** Three stores for the claimers; a fourth, when asked for, for a worker of its own. */
  async function openStores(label: string, count = 3): Promise<PostgresStore[]> {
    const url = await freshPostgresUrl(label);
    // One after the other: the first migrates, the others find the schema current.
    const opened: PostgresStore[] = [];
    for (let i = 0; i < count; i++) opened.push(await PostgresStore.open(url, { poolSize: 8 }));
    stores.push(...opened);
    return opened;
  }
  const CLAIMER_POOLS = 3;
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  it('8 claimers on 3 pools, claiming 5 at a time: each of 300 tasks is claimed exactly once', async () => {
    const [a, b] = await openStores('pg_dispatch_many');
    const tasks = 300;
    const claimers = 8;
    for (let i = 0; i < tasks; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => a!.admit(admission({ taskId: `m-${i + j}`, authKey: 'dispatch/many', now: NOW + ((i + j) % 7) }))),
      );
    }
    const started = Date.now();
    const perClaimer = await Promise.all(
      Array.from({ length: claimers }, async (_, c) => {
        const got: TaskRecord[] = [];
        for (;;) {
          const batch = await stores[c % CLAIMER_POOLS]!.claim(claimBy(`c${c}`, NOW + 100, 60_000));
          if (batch.length === 0) return got;
          got.push(...batch);
        }
      }),
    );
    const elapsed = Date.now() - started;
    const ids = perClaimer.flat().map((r) => r.taskId);
    expect(ids).toHaveLength(tasks);
    expect(new Set(ids).size).toBe(tasks);
    expect(await b!.claim(claimBy('late', NOW + 100, 60_000, 50))).toEqual([]);

    // The stored facts agree: one claim each, leased to the claimer that got it, entry still open.
    const owners = new Map(perClaimer.flatMap((got, c) => got.map((r) => [r.taskId, `c${c}`] as const)));
    const rows = await a!.pool.query<{ task_id: string; version: number; attempt: number; lease_owner: string; claimed_by: string }>(
      `SELECT t.task_id, t.version, t.attempt, t.lease_owner, o.claimed_by FROM tasks t JOIN task_outbox o USING (task_id)`,
    );
    expect(rows.rows).toHaveLength(tasks);
    for (const r of rows.rows)
      expect(r).toEqual({ task_id: r.task_id, version: 2, attempt: 1, lease_owner: owners.get(r.task_id), claimed_by: owners.get(r.task_id) });
    const audited = await a!.pool.query<{ n: string }>(`SELECT count(DISTINCT task_id) AS n FROM task_audit WHERE detail LIKE 'claim %'`);
    expect(Number(audited.rows[0]?.n)).toBe(tasks);
    expect(await a!.pendingDispatch()).toBe(tasks);
    console.log(
      `[postgres dispatch] ${tasks} tasks, ${claimers} claimers on ${CLAIMER_POOLS} pools, claims per claimer ${JSON.stringify(perClaimer.map((g) => g.length))}, ${elapsed} ms`,
    );
  });

  // Also the deadlock guard: with only the outbox entry locked by the claim walk, w1's terminal
  // writes (task row, then the entry to close it) deadlock against claimers on every run.
  it("lease takeover: w1's late heartbeats and terminal writes race 8 claimers; one applied terminal write per task", async () => {
    const [a, , , w1Store] = await openStores('pg_dispatch_takeover', 4);
    const tasks = 100;
    const claimers = 8;
    const leaseMs = 1000;
    await Promise.all(Array.from({ length: tasks }, (_, i) => a!.admit(admission({ taskId: `k-${i}`, authKey: 'dispatch/takeover' }))));
    const held: TaskRecord[] = [];
    for (let batch = await a!.claim(claimBy('w1', NOW, leaseMs, 30)); batch.length > 0; batch = await a!.claim(claimBy('w1', NOW, leaseMs, 30))) {
      held.push(...batch);
    }
    expect(held).toHaveLength(tasks);

    // Every w1 lease has run out at `late`; w1 has not noticed and carries on with all its tasks
    // at once, from a pool of its own, while the claimers start.
    const late = NOW + leaseMs + 500;
    let w1Done = false;
    const started = Date.now();
    const w1 = (async () => {
      const outcomes = await Promise.all(
        held.map(async (task) => {
          const beat = await w1Store!.heartbeat({ fence: fenceOf(task), now: late, leaseMs });
          const write = { status: 'completed', expectedVersion: task.version, result: { by: 'w1' } };
          const written = await w1Store!.transition({ taskId: task.taskId, authKey: task.authKey, write, correlationId: 'w1', now: late });
          return { taskId: task.taskId, beat, decision: written.decision };
        }),
      );
      w1Done = true;
      return outcomes;
    })();
    const runs = Array.from({ length: claimers }, async (_, n) => {
      const store = stores[n % CLAIMER_POOLS]!;
      const got: TaskRecord[] = [];
      for (;;) {
        // Read before claiming: an empty claim that began after w1 finished means nothing is left.
        const finished = w1Done;
        const batch = await store.claim(claimBy(`c${n}`, late, leaseMs));
        for (const r of batch) expect(await store.heartbeat({ fence: fenceOf(r), now: late, leaseMs })).toBe(true);
        got.push(...batch);
        if (batch.length > 0) continue;
        if (finished) return got;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    });
    const [w1Outcomes, ...perClaimer] = await Promise.all([w1, ...runs]);
    const elapsed = Date.now() - started;

    // The new holders finish what they took over; their fence still holds.
    const takenOver = perClaimer.flat();
    for (const r of takenOver) {
      const done = await a!.transition({
        taskId: r.taskId,
        authKey: r.authKey,
        write: { status: 'completed', expectedVersion: r.version, result: { by: r.leaseOwner } },
        correlationId: r.leaseOwner!,
        now: late + 1,
      });
      expect(done.decision).toBe('APPLY_TRANSITION');
    }
    const takenIds = new Set(takenOver.map((r) => r.taskId));
    expect(takenIds.size).toBe(takenOver.length);
    for (const o of w1Outcomes) {
      // w1 wins exactly the tasks nobody took over, and a heartbeat that held kept them its own.
      expect(o.decision).toBe(takenIds.has(o.taskId) ? 'BLOCK_STALE_VERSION' : 'APPLY_TRANSITION');
      if (o.beat) expect(o.decision).toBe('APPLY_TRANSITION');
    }
    const applied = await a!.pool.query<{ task_id: string; n: string }>(
      `SELECT t.task_id, count(a.id) FILTER (WHERE a.decision = 'APPLY_TRANSITION' AND a.status IN ('completed', 'failed', 'cancelled')) AS n
         FROM tasks t LEFT JOIN task_audit a USING (task_id) GROUP BY t.task_id`,
    );
    expect(applied.rows).toHaveLength(tasks);
    expect(applied.rows.every((r) => r.n === '1')).toBe(true);
    const facts = await a!.pool.query<{ status: string; version: number; attempt: number; n: string }>(
      `SELECT status, version, attempt, count(*) AS n FROM tasks GROUP BY 1, 2, 3 ORDER BY 2`,
    );
    const w1Won = tasks - takenOver.length;
    expect(facts.rows).toEqual([
      ...(w1Won > 0 ? [{ status: 'completed', version: 3, attempt: 1, n: String(w1Won) }] : []),
      ...(takenOver.length > 0 ? [{ status: 'completed', version: 4, attempt: 2, n: String(takenOver.length) }] : []),
    ]);
    expect(await a!.pendingDispatch()).toBe(0);
    console.log(
      `[postgres takeover] ${tasks} tasks, ${claimers} claimers on ${CLAIMER_POOLS} pools, taken over ${takenOver.length} (w1 kept ${w1Won}, ` +
        `its heartbeats held ${w1Outcomes.filter((o) => o.beat).length}), claims per claimer ${JSON.stringify(perClaimer.map((g) => g.length))}, ${elapsed} ms`,
    );
  });
});
