import type { TaskRecord } from '../../src/core/types.js';
import { record } from './records.js';

/** One terminal writer of a race trial, run by process `proc`. */
export interface RaceWriter {
  proc: number;
  /** `cancel` goes through `store.cancel`; `write` through `store.transition`. */
  kind: 'write' | 'cancel';
  status: 'completed' | 'failed' | 'cancelled';
  expectedVersion: number;
  /** A result from a small pool, so equal results (IDEMPOTENT_TERMINAL) happen too; or none. */
  result?: { content: { type: 'text'; text: string }[] };
}

export interface RaceTrial {
  taskId: string;
  writers: RaceWriter[];
}

export interface RacePlan {
  authKey: string;
  /** The clock every writer uses; the seeded tasks never expire before it. */
  now: number;
  trials: RaceTrial[];
}

/** What a child sends back: `[trial, writer, decision]` for each of its writers. */
export interface RaceReport {
  proc: number;
  outcomes: [number, number, string][];
  /** Writes that hit STORE_UNAVAILABLE (busy timeout) and were retried. */
  busyRetries: number;
  /** Per trial: [start, end] on the shared wall clock (performance.timeOrigin + now()). */
  windows: [number, number][];
  elapsedMs: number;
}

/** The only version a valid writer names: seeded tasks start at version 1. */
export const SEED_VERSION = 1;

const RESULTS = ['alpha', 'beta', 'gamma'].map((text) => ({ content: [{ type: 'text' as const, text }] }));
const STATUSES = ['completed', 'failed', 'cancelled'] as const;

/** A small seeded PRNG (mulberry32), so a failing plan can be regenerated from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `trials` trials of 16–64 writers split over `procs` processes: ~15% cancels, ~20% stale
 * versions, random statuses and results. Every process gets at least one writer that can apply
 * (a cancel or a current version), so each trial is a real race between processes.
 */
export function makeRacePlan(trials: number, procs: number, seed: number): RacePlan {
  const rand = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const plan: RacePlan = { authKey: 'race/tenant', now: Date.parse('2026-07-23T12:00:00.000Z'), trials: [] };
  for (let t = 0; t < trials; t++) {
    const count = 16 + Math.floor(rand() * 49);
    const writers: RaceWriter[] = [];
    for (let w = 0; w < count; w++) {
      const live = w < procs; // the first writer of each process can apply
      const kind = !live && rand() < 0.15 ? 'cancel' : 'write';
      writers.push({
        proc: live ? w : Math.floor(rand() * procs),
        kind,
        status: kind === 'cancel' ? 'cancelled' : pick(STATUSES),
        expectedVersion: live || rand() >= 0.2 ? SEED_VERSION : pick([0, 2, 7]),
        ...(rand() < 0.25 ? {} : { result: pick(RESULTS) }),
      });
    }
    // Shuffle so the live writer is not always first in its process.
    for (let i = writers.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [writers[i], writers[j]] = [writers[j]!, writers[i]!];
    }
    plan.trials.push({ taskId: `race-${seed}-${t}`, writers });
  }
  return plan;
}

/** The working task each trial races on. */
export function raceSeedRecord(plan: RacePlan, trial: RaceTrial): TaskRecord {
  return record({
    taskId: trial.taskId,
    authKey: plan.authKey,
    toolName: 'race',
    version: SEED_VERSION,
    createdAt: plan.now - 1000,
    lastUpdatedAt: plan.now - 1000,
    ttl: null,
    expiresAt: null,
    pollInterval: null,
  });
}
