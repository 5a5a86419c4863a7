import { expect, it, describe } from 'vitest';
import { requestDigest } from '../../../src/core/digest.js';
import { isTerminal } from '../../../src/core/types.js';
import type { TaskStore } from '../../../src/store/types.js';
import { HOUR, PG_NOW, T0, pgAdmission, record } from '../../support/records.js';
import { prng } from '../../support/sqlite-race-plan.js';
import { A, B, admission, defineStoreSuite, request, tally } from './store-suite.js';

// Races: the active-task limit, concurrent admissions of one key and concurrent terminal
// writers, each over several handles on one store where the store has connections.

const TERMINALS = ['completed', 'failed', 'cancelled'] as const;
// A few result shapes, so that equal writes (IDEMPOTENT_TERMINAL) happen as well as conflicting ones.
const RESULTS = [undefined, { content: [{ type: 'text', text: 'a' }] }, { content: [{ type: 'text', text: 'b' }] }, { error: 'x' }];
const LOSING = new Set(['BLOCK_TERMINAL_REWRITE', 'IDEMPOTENT_TERMINAL', 'BLOCK_STALE_VERSION', 'ALREADY_TERMINAL']);

defineStoreSuite('races', ({ harness, fresh, freshMany }) => {
  describe('active-task limit', () => {
    it('refuses a new task at the limit, still replays an existing one, and counts only live tasks', async () => {
      const store = await fresh('limit');
      const a = await store.admit(admission({ maxActive: 2, idempotencyKey: 'k1' }));
      await store.admit(admission({ maxActive: 2 }));
      expect(await store.admit(admission({ maxActive: 2 }))).toEqual({ decision: 'BLOCK_TASK_LIMIT', record: null });
      const replay = await store.admit(admission({ maxActive: 2, idempotencyKey: 'k1' }));
      expect(replay.record?.taskId).toBe(a.record?.taskId);
      expect((await store.admit(admission({ maxActive: 2, authKey: B }))).decision).toBe('ACCEPT_TASK');
      await store.transition({ taskId: a.record!.taskId, authKey: A, write: { status: 'completed', expectedVersion: 1 }, correlationId: 'c', now: T0 });
      expect((await store.admit(admission({ maxActive: 2 }))).decision).toBe('ACCEPT_TASK');
      expect((await store.admit(admission({ maxActive: 2, now: T0 + HOUR }))).decision).toBe('ACCEPT_TASK');
    });

    it('bounds stored tasks, finished ones included: a new task at the bound is BLOCK_STORED_LIMIT, a replay is not', async () => {
      const store = await fresh('stored-limit');
      const a = await store.admit(admission({ maxStored: 2, idempotencyKey: 'k1' }));
      await store.transition({ taskId: a.record!.taskId, authKey: A, write: { status: 'completed', expectedVersion: 1 }, correlationId: 'c', now: T0 });
      await store.admit(admission({ maxStored: 2 }));
      expect(await store.admit(admission({ maxStored: 2, maxActive: 10 }))).toEqual({ decision: 'BLOCK_STORED_LIMIT', record: null });
      // The finished task still answers its retry.
      expect((await store.admit(admission({ maxStored: 2, idempotencyKey: 'k1' }))).decision).toBe('REPLAY_TASK');
      expect((await store.admit(admission({ maxStored: 2, authKey: B }))).decision).toBe('ACCEPT_TASK');
      // Once the caller's tasks expire they no longer count.
      expect((await store.admit(admission({ maxStored: 2, now: T0 + HOUR }))).decision).toBe('ACCEPT_TASK');
    });

    it('holds the stored bound under concurrent admissions over several handles', async () => {
      const handles = await freshMany('stored-race', 3);
      const outs = await Promise.all(Array.from({ length: 24 }, (_, i) => handles[i % 3]!.admit(admission({ maxStored: 7 }))));
      expect(tally(outs.map((o) => o.decision))).toEqual({ ACCEPT_TASK: 7, BLOCK_STORED_LIMIT: 17 });
    });

    it('holds under concurrent admissions', async () => {
      const store = await fresh('limit-race');
      const outs = await Promise.all(Array.from({ length: 24 }, () => store.admit(admission({ maxActive: 5 }))));
      expect(outs.filter((o) => o.decision === 'ACCEPT_TASK')).toHaveLength(5);
      expect(outs.filter((o) => o.decision === 'BLOCK_TASK_LIMIT')).toHaveLength(19);
    });
  });

  describe('races', () => {
    it('64 concurrent admits of one key over four handles give one task', async () => {
      const handles = await freshMany('race-admit', 4);
      const store = handles[0]!;
      const outs = await Promise.all(Array.from({ length: 64 }, (_, i) => handles[i % 4]!.admit(admission({ idempotencyKey: 'same' }))));
      const accepted = outs.filter((o) => o.decision === 'ACCEPT_TASK');
      expect(accepted).toHaveLength(1);
      expect(outs.filter((o) => o.decision === 'REPLAY_TASK').every((o) => o.record?.taskId === accepted[0]!.record!.taskId)).toBe(true);
      expect(outs.filter((o) => o.decision === 'REPLAY_TASK')).toHaveLength(63);
      expect(tally(outs.map((o) => o.decision))).toEqual({ ACCEPT_TASK: 1, REPLAY_TASK: 63 });
      // One task, one outbox entry, and a create line for every one of the 64 answers.
      expect(await store.pendingDispatch()).toBe(1);
      const sameTrail = await store.auditTrail({ taskId: accepted[0]!.record!.taskId });
      expect(tally(sameTrail.filter((e) => e.surface === 'create').map((e) => e.decision))).toEqual({ ACCEPT_TASK: 1, REPLAY_TASK: 63 });
      const digests = await Promise.all(
        Array.from({ length: 64 }, (_, i) => {
          const req = request({ month: `m${i}` });
          return handles[i % 4]!.admit(admission({ idempotencyKey: 'other', request: req, requestDigest: requestDigest(req) }));
        }),
      );
      expect(digests.filter((o) => o.decision === 'ACCEPT_TASK')).toHaveLength(1);
      expect(digests.filter((o) => o.decision === 'BLOCK_IDEMPOTENCY_COLLISION')).toHaveLength(63);
      expect(tally(digests.map((o) => o.decision))).toEqual({ ACCEPT_TASK: 1, BLOCK_IDEMPOTENCY_COLLISION: 63 });
      const otherTrail = await store.auditTrail({ taskId: digests.find((o) => o.decision === 'ACCEPT_TASK')!.record!.taskId });
      expect(otherTrail.filter((e) => e.surface === 'create')).toHaveLength(64);
      expect((await store.list({ authKey: A, now: T0, after: null, limit: 500 })).records).toHaveLength(2);
      expect(await store.pendingDispatch()).toBe(2);
    });

    it('concurrent terminal writers on one task: exactly one applies', async () => {
      const store = await fresh('race-terminal');
      const trials = 50;
      await store.seed(Array.from({ length: trials }, (_, i) => record({ taskId: `r${i}`, version: 2 })));
      const counts: Record<string, number> = {};
      for (let i = 0; i < trials; i++) {
        const writers = 16 + ((i * 7) % 49);
        const outs = await Promise.all(
          Array.from({ length: writers }, (_, w) => {
            if (w % 11 === 5) return store.cancel({ authKey: A, taskId: `r${i}`, now: T0, correlationId: `c${w}` });
            const status = (['completed', 'failed', 'cancelled'] as const)[w % 3]!;
            return store.transition({
              taskId: `r${i}`,
              authKey: A,
              write: { status, expectedVersion: w % 5 === 0 ? 1 : 2, result: { w } },
              correlationId: `c${w}`,
              now: T0,
            });
          }),
        );
        for (const o of outs) counts[o.decision] = (counts[o.decision] ?? 0) + 1;
        expect(outs.filter((o) => o.decision === 'APPLY_TRANSITION' || o.decision === 'CANCEL_TASK')).toHaveLength(1);
        const stored = (await store.get({ authKey: A, taskId: `r${i}`, now: T0 })).record!;
        expect(isTerminal(stored.status)).toBe(true);
        expect(stored.version).toBe(3);
        const applied = (await store.auditTrail({ taskId: `r${i}` })).filter((e) => e.decision === 'APPLY_TRANSITION' || e.decision === 'CANCEL_TASK');
        expect(applied).toHaveLength(1);
      }
      expect(Object.keys(counts).sort()).toEqual(expect.arrayContaining(['ALREADY_TERMINAL', 'BLOCK_STALE_VERSION', 'BLOCK_TERMINAL_REWRITE']));
    });

    // 1,000 trials take ~50 s on PostgreSQL on 2 cores by themselves (every writer is a committed
    // transaction); the default keeps `npm test` short, TASKLATCH_RACE_TRIALS=1000 runs the figure.
    const trials = Number(process.env.TASKLATCH_RACE_TRIALS ?? 200);

    it('random terminal writers (and cancels) over two handles: exactly one applied write per task', { timeout: 60_000 + trials * 200 }, async () => {
      const handles = await freshMany('race-writers', 2);
      const seed = Number(process.env.TASKLATCH_RACE_SEED ?? Math.floor(Math.random() * 2 ** 31));
      const next = prng(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
      const all: string[] = [];
      const started = Date.now();
      for (let trial = 0; trial < trials; trial++) {
        const taskId = `race-${trial}`;
        await handles[0]!.admit(pgAdmission({ taskId, authKey: 'race/writers' }));
        const count = 16 + Math.floor(next() * 49);
        const stale = (): boolean => next() < 0.2;
        const ops: ((store: TaskStore) => Promise<{ decision: string }>)[] = Array.from({ length: count }, (_, i) => {
          // The first writer always holds the current version, so someone can win every trial.
          const write = { status: pick(TERMINALS), result: pick(RESULTS), expectedVersion: i > 0 && stale() ? 0 : 1 };
          return (store) => store.transition({ taskId, authKey: 'race/writers', write, correlationId: `w${i}`, now: PG_NOW });
        });
        if (next() < 0.3) ops.push((store) => store.cancel({ authKey: 'race/writers', taskId, now: PG_NOW, correlationId: 'cancel' }));
        // Shuffled, then all started at once: the start order decides who asks the pool first.
        for (let i = ops.length - 1; i > 0; i--) {
          const j = Math.floor(next() * (i + 1));
          [ops[i], ops[j]] = [ops[j]!, ops[i]!];
        }
        const decisions = (await Promise.all(ops.map((op, i) => op(handles[i % 2]!)))).map((o) => o.decision);
        all.push(...decisions);
        const winners = decisions.filter((d) => d === 'APPLY_TRANSITION' || d === 'CANCEL_TASK');
        expect(winners, `trial ${trial} (seed ${seed})`).toHaveLength(1);
        expect(
          decisions.filter((d) => d !== winners[0] && !LOSING.has(d)),
          `trial ${trial} (seed ${seed})`,
        ).toEqual([]);
      }
      const elapsed = Date.now() - started;
      // The stored facts agree: one terminal status at version 2 per task, one applied write in its trail.
      for (let trial = 0; trial < trials; trial++) {
        const stored = (await handles[1]!.get({ authKey: 'race/writers', taskId: `race-${trial}`, now: PG_NOW })).record!;
        expect(TERMINALS.includes(stored.status as (typeof TERMINALS)[number]) && stored.version === 2, `race-${trial}`).toBe(true);
        const trail = await handles[1]!.auditTrail({ taskId: `race-${trial}` });
        expect(
          trail.filter((e) => e.decision === 'APPLY_TRANSITION' || e.decision === 'CANCEL_TASK'),
          `race-${trial}`,
        ).toHaveLength(1);
      }
      console.log(`[${harness.name} race] seed ${seed}: ${trials} trials, ${all.length} writers, ${elapsed} ms, outcomes ${JSON.stringify(tally(all))}`);
    });
  });
});
