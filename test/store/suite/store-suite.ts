import { afterEach, describe, it } from 'vitest';
import { requestDigest } from '../../../src/core/digest.js';
import type { WireRequest } from '../../../src/core/types.js';
import type { AdmitInput, TaskStore } from '../../../src/store/types.js';
import { HOUR, T0 } from '../../support/records.js';
import { ALL_HARNESSES, type StoreHarness } from '../../support/stores.js';

/** What each suite file's body gets: its harness and fresh stores that close after each test. */
export interface StoreSuite {
  harness: StoreHarness;
  /** A new empty store. */
  fresh(label: string): Promise<TaskStore>;
  /** `count` handles on one new empty store (see StoreHarness.openMany). */
  freshMany(label: string, count: number): Promise<TaskStore[]>;
}

/**
 * Defines `body` once per store harness (memory, SQLite, PostgreSQL): the store suite is the
 * same behaviour asked of every store, split over several files that run in parallel.
 */
export function defineStoreSuite(title: string, body: (suite: StoreSuite) => void): void {
  describe.each(ALL_HARNESSES.map((harness) => ({ harness, title: harness.title ?? harness.name })))(`$title store: ${title}`, ({ harness }) => {
    const skip = harness.skip?.() ?? null;
    if (skip !== null) {
      it.skip(skip, () => undefined);
      return;
    }
    const open: TaskStore[] = [];
    afterEach(async () => {
      // A memory harness hands out one instance several times; close each store once.
      await Promise.all([...new Set(open.splice(0))].map((s) => s.close()));
    });
    body({
      harness,
      fresh: async (label) => {
        const store = await harness.open(label);
        open.push(store);
        return store;
      },
      freshMany: async (label, count) => {
        const stores = await harness.openMany(label, count);
        open.push(...stores);
        return stores;
      },
    });
  });
}

export const A = 'tenant-a/alice';
export const B = 'tenant-b/bob';
export const ok = { content: [{ type: 'text', text: 'done' }], isError: false };

export function request(args: Record<string, unknown> = { month: '2026-06' }, key?: string): WireRequest {
  return {
    method: 'tools/call',
    params: { name: 'export_ledger', arguments: args, task: { ttl: HOUR }, ...(key ? { _meta: { 'io.tasklatch/idempotency-key': key } } : {}) },
  };
}

let seq = 0;
/** An admission of a new task id for auth key A at T0; tests override what they are about. */
export function admission(overrides: Partial<AdmitInput> = {}): AdmitInput {
  const req = overrides.request ?? request();
  return {
    taskId: `task-${++seq}`,
    authKey: A,
    toolName: 'export_ledger',
    request: req,
    requestDigest: requestDigest(req),
    idempotencyKey: null,
    ttl: HOUR,
    pollInterval: 500,
    correlationId: `corr-${seq}`,
    now: T0,
    ...overrides,
  };
}

/** Decision → how many times, for comparing a race's outcomes at a glance. */
export function tally(decisions: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of decisions) counts[d] = (counts[d] ?? 0) + 1;
  return counts;
}
