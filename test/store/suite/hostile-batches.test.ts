import fc from 'fast-check';
import { expect, it } from 'vitest';
import { isTasklatchError } from '../../../src/core/errors.js';
import type { AdmitInput, TaskStore } from '../../../src/store/types.js';
import { HOUR, T0 } from '../../support/records.js';
import { admission, defineStoreSuite, ok, request } from './store-suite.js';

// Hostile strings in every field a caller controls, sent in the same turns as an innocent
// tenant's reads and writes (so that they share the stores' batches), never change what the
// innocent tenant is answered: its answers equal those it gets with the store to itself. The
// hostile calls fail alone, as bad input, never as an outage.

/** Text no database keeps as it is, separators, controls, escapes spelled out, and the huge. */
const hostileText = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udc00',
    'u\ud800',
    'u\udc00',
    '\udc00\ud800',
    '\ud83d\ude00\ud800',
    '\u0001\u001f\u007f\u0085',
    '\u2028\u2029\ufeff\ufffd',
    '/',
    ':',
    '..',
    '\\u0000',
    '\\\\ud800',
    '"\'\\',
    '',
    'x'.repeat(10_000),
  ),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }).map((s) => `${s}\u0000`),
  // Storable but too large for an index row: refused by the database, for this caller.
  fc.string({ unit: 'grapheme-ascii', minLength: 3000, maxLength: 3200 }),
);

const hostileOp = fc.record({
  phase: fc.integer({ min: 1, max: 4 }),
  kind: fc.constantFrom('admit', 'admitKeyed', 'get', 'transition', 'cancel', 'list', 'audit', 'progress', 'visible'),
  a: hostileText,
  b: hostileText,
  c: hostileText,
  /** Aim at one of the innocent's tasks instead of a hostile id. */
  aimAtInnocent: fc.boolean(),
});
type HostileOp = typeof hostileOp extends fc.Arbitrary<infer T> ? T : never;

defineStoreSuite('hostile strings beside an innocent tenant', ({ harness, fresh }) => {
  it("never change the innocent tenant's answers, and fail alone, as bad input", async () => {
    const store = await fresh('hostile-batches');
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(hostileOp, { minLength: 1, maxLength: 12 }), async (ops) => {
        run += 1;
        const alone = normalized(await innocentScript(store, `alone${run}`, []), `alone${run}`);
        const hostileOutcomes: PromiseSettledResult<unknown>[] = [];
        const busy = normalized(await innocentScript(store, `busy${run}`, ops, hostileOutcomes), `busy${run}`);
        expect(busy).toEqual(alone);
        for (const outcome of hostileOutcomes) {
          if (outcome.status === 'fulfilled') continue;
          const reason: unknown = outcome.reason;
          // Bad input, or the database's refusal of this caller's data: never an outage.
          expect(isTasklatchError(reason, 'STORE_UNAVAILABLE'), String(reason)).toBe(false);
          if (isTasklatchError(reason)) expect(reason.code, reason.message).toBe('INVALID_INPUT');
        }
      }),
      { numRuns: harness.name === 'memory' ? 30 : 12 },
    );
  }, 120_000);

  // The SQL stores write text as UTF-8, where both lone surrogates become U+FFFD: stored, they
  // would be one auth key. The memory store keeps JavaScript strings as they are, distinct.
  it.skipIf(harness.name === 'memory')('refuse principals and ids a database would store changed, so no two share a key', async () => {
    const store = await fresh('hostile-keys');
    for (const authKey of ['u\ud800', 'u\udc00', 'u\u0000']) {
      await expect(store.admit(hostileAdmission({ taskId: `k-${authKey.charCodeAt(1)}`, authKey, now: T0 }))).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      await expect(store.list({ authKey, now: T0, after: null, limit: 5 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    await expect(store.admit(hostileAdmission({ taskId: 'id\udfff', authKey: 'acme/alice', now: T0 }))).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect((await store.admit(hostileAdmission({ taskId: 'id\ufffd', authKey: 'acme/alice', now: T0 }))).decision).toBe('ACCEPT_TASK');
  });
});

/**
 * The innocent tenant's calls in four phases, each phase's calls and `ops` of that phase asked
 * for in one turn of the event loop; what the innocent was answered, phase by phase.
 */
async function innocentScript(store: TaskStore, prefix: string, ops: readonly HostileOp[], hostile: PromiseSettledResult<unknown>[] = []): Promise<unknown[]> {
  const authKey = `${prefix}/alice`;
  const ids = [0, 1, 2].map((i) => `${prefix}-task-${i}`);
  const at = (phase: number) => T0 + phase * 1000;
  const answers: unknown[] = [];
  const phase = async (n: number, innocent: () => Array<Promise<unknown>>) => {
    // One synchronous block: the innocent's calls and the hostile ones join the same batches.
    const mine = Promise.allSettled(innocent());
    const theirs = Promise.allSettled(ops.filter((op) => op.phase === n).map((op) => hostileCall(store, op, ids, at(n))));
    answers.push(...(await mine).map(settledAnswer));
    hostile.push(...(await theirs));
  };
  await phase(1, () => [
    store.admit(admission({ taskId: ids[0]!, authKey, correlationId: `${prefix}-c0`, now: at(1) })),
    store.admit(admission({ taskId: ids[1]!, authKey, idempotencyKey: `${prefix}-key`, maxActive: 10, correlationId: `${prefix}-c1`, now: at(1) })),
    store.admit(admission({ taskId: ids[2]!, authKey, request: request({ month: 'ü\ud83d\ude00' }), correlationId: `${prefix}-c2`, now: at(1) })),
  ]);
  await phase(2, () => ids.map((taskId) => store.get({ authKey, taskId, now: at(2) })));
  await phase(3, () => [
    store.transition({ taskId: ids[0]!, authKey, write: { status: 'completed', expectedVersion: 1, result: ok }, correlationId: `${prefix}-t0`, now: at(3) }),
    store.transition({
      taskId: ids[1]!,
      authKey,
      write: { status: 'failed', expectedVersion: 1, statusMessage: 'no luck' },
      correlationId: `${prefix}-t1`,
      now: at(3),
    }),
    store.cancel({ taskId: ids[2]!, authKey, correlationId: `${prefix}-t2`, now: at(3) }),
  ]);
  await phase(4, () => [
    ...ids.map((taskId) => store.get({ authKey, taskId, now: at(4) })),
    store.list({ authKey, now: at(4), after: null, limit: 10 }),
    // In no particular order (the store's contract): compared as a set.
    store.visibleTaskIds({ authKey, taskIds: ids, now: at(4) }).then((found) => [...found].sort()),
    store.recordDecision({ at: at(4), surface: 'read', decision: 'RETURN_STATUS', authKey, taskId: ids[0]!, correlationId: `${prefix}-r` }),
    Promise.resolve(store.publishProgress({ taskId: ids[0]!, progress: 1, message: 'm', origin: prefix })),
  ]);
  // Its own lines of its task's trail (a hostile miss on the task's id is rightly there too).
  const trail = await store.auditTrail({ taskId: ids[0]! });
  answers.push(trail.filter((line) => line.authKey === authKey));
  return answers;
}

/** One hostile call: its strings in every field it has. */
function hostileCall(store: TaskStore, op: HostileOp, innocentIds: readonly string[], now: number): Promise<unknown> {
  const taskId = op.aimAtInnocent ? innocentIds[op.a.length % innocentIds.length]! : op.a;
  switch (op.kind) {
    case 'admit':
      return store.admit(hostileAdmission({ taskId: op.a, authKey: op.b, toolName: op.c, correlationId: op.c, request: request({ s: op.b, [op.c]: 1 }), now }));
    case 'admitKeyed':
      return store.admit(hostileAdmission({ taskId: `h-${op.a}`, authKey: op.b, idempotencyKey: op.c, maxActive: 5, maxStored: 50, correlationId: op.a, now }));
    case 'get':
      return store.get({ authKey: op.b, taskId, now });
    case 'transition':
      return store.transition({
        taskId,
        authKey: op.b,
        write: { status: 'completed', expectedVersion: 1, result: { content: [{ type: 'text', text: op.c }] }, statusMessage: op.c },
        correlationId: op.a,
        now,
      });
    case 'cancel':
      return store.cancel({ taskId, authKey: op.b, correlationId: op.c, now });
    case 'list':
      return store.list({ authKey: op.b, now, after: { createdAt: now, taskId: op.c }, limit: 5 });
    case 'visible':
      return store.visibleTaskIds({ authKey: op.b, taskIds: [taskId, op.c], now });
    case 'audit':
      return store.recordDecision({ at: now, surface: 'read', decision: 'RETURN_STATUS', authKey: op.b, taskId, correlationId: op.c, detail: op.a });
    default:
      // Best effort and never throws.
      store.publishProgress({ taskId, progress: 1, message: op.b, origin: op.c });
      return Promise.resolve();
  }
}

/** An admission of hostile strings (its digest is not computed: no digest takes a lone surrogate). */
function hostileAdmission(overrides: Partial<AdmitInput> & { now: number }): AdmitInput {
  return {
    taskId: 'hostile',
    authKey: 'hostile',
    toolName: 'export_ledger',
    request: request(),
    requestDigest: 'hostile-digest',
    idempotencyKey: null,
    ttl: HOUR,
    pollInterval: 500,
    correlationId: 'hostile',
    ...overrides,
  };
}

function settledAnswer(outcome: PromiseSettledResult<unknown>): unknown {
  return outcome.status === 'fulfilled' ? outcome.value : { rejected: String(outcome.reason) };
}

/** `answers` with the run's prefix written as `P`, so two runs compare. */
function normalized(answers: unknown[], prefix: string): unknown {
  return JSON.parse(JSON.stringify(answers ?? null).replaceAll(prefix, 'P')) as unknown;
}
