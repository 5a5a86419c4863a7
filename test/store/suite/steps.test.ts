import { expect, it } from 'vitest';
import { isTasklatchError } from '../../../src/core/errors.js';
import type { StepWrite } from '../../../src/core/step-rules.js';
import type { Fence, RecordStepInput, TaskStore } from '../../../src/store/types.js';
import { HOUR, T0, record } from '../../support/records.js';
import { A, B, admission, defineStoreSuite, ok, tally } from './store-suite.js';
import { until } from '../../support/until.js';

// Steps: a run records its task's journal with fenced writes, and a sleep suspends the task
// until its wake time. Every store must make the memory store's decisions and write its lines.

const LEASE = 60_000;
const claimInput = (owner: string, now: number) => ({
  owner,
  now,
  leaseMs: LEASE,
  limit: 5,
  maxAttempts: 5,
  abandonedResult: ok,
  correlationId: `claim-${owner}`,
});
const done = (o: Partial<StepWrite> = {}): StepWrite => ({
  position: 0,
  name: 'charge',
  kind: 'do',
  status: 'completed',
  attempts: 1,
  startedAt: T0 + 1,
  ...o,
});
const nap = (position: number, wakeAt: number): StepWrite => ({
  position,
  name: 'nap',
  kind: 'sleep',
  status: 'sleeping',
  attempts: 0,
  wakeAt,
  startedAt: T0 + 2,
});

defineStoreSuite('steps', ({ harness, fresh, freshMany }) => {
  /** An admitted task claimed by `owner` at T0 (version 2) and its fence. */
  async function claimed(store: TaskStore, overrides: Parameters<typeof admission>[0] = {}, owner = 'w1'): Promise<Fence> {
    const admitted = (await store.admit(admission(overrides))).record!;
    const [held] = await store.claim(claimInput(owner, T0));
    expect(held?.taskId).toBe(admitted.taskId);
    return { taskId: admitted.taskId, authKey: admitted.authKey, owner, version: held!.version };
  }
  const record_ = (store: TaskStore, fence: Fence, step: StepWrite, extra: Partial<RecordStepInput> = {}) =>
    store.recordStep({ fence, step, maxStepBytes: 100, now: T0 + 10, correlationId: 'step', ...extra });
  const journal = async (store: TaskStore, fence: Fence, now = T0 + 20) => (await store.steps({ authKey: fence.authKey, taskId: fence.taskId, now })).steps;
  const stepLines = async (store: TaskStore, taskId: string) => (await store.auditTrail({ taskId })).filter((l) => l.surface === 'step');

  it('records values by position, without a version bump, and every later read replays them exactly', async () => {
    const store = await fresh('step-record');
    const fence = await claimed(store);
    const outs = [
      await record_(store, fence, done({ position: 1, name: 'receipt', value: { id: 7, tags: ['a', 'é'], nested: { n: null } } })),
      await record_(store, fence, done({ position: 0, name: 'side-effect' })),
      await record_(store, fence, done({ position: 2, name: 'nothing', value: null })),
    ];
    expect(outs.map((o) => [o.decision, o.record?.version, o.record?.leaseOwner])).toEqual(Array(3).fill(['APPLY_STEP', 2, 'w1']));
    const steps = await journal(store, fence);
    expect(steps!.map((s) => [s.position, s.name, s.kind, s.status, s.attempts, s.value, s.valueBytes, s.error, s.wakeAt])).toEqual([
      [0, 'side-effect', 'do', 'completed', 1, undefined, 0, null, null],
      [1, 'receipt', 'do', 'completed', 1, { id: 7, tags: ['a', 'é'], nested: { n: null } }, 46, null, null],
      [2, 'nothing', 'do', 'completed', 1, null, 4, null, null],
    ]);
    expect(steps![0]).toMatchObject({ taskId: fence.taskId, startedAt: T0 + 1, updatedAt: T0 + 10 });
    // The task itself did not move: the run still holds it, heartbeats included.
    expect(await store.heartbeat({ fence, now: T0 + 11, leaseMs: LEASE })).toBe(true);
    expect(await stepLines(store, fence.taskId)).toEqual([
      expect.objectContaining({ decision: 'APPLY_STEP', authKey: A, correlationId: 'step', status: 'working', version: 2, detail: 'receipt@1 completed' }),
      expect.objectContaining({ decision: 'APPLY_STEP', detail: 'side-effect@0 completed' }),
      expect.objectContaining({ decision: 'APPLY_STEP', detail: 'nothing@2 completed' }),
    ]);
    expect((await stepLines(store, fence.taskId)).every((l) => l.count === undefined)).toBe(true);
    // Out of reach: the same misses as every read.
    expect(await store.steps({ authKey: B, taskId: fence.taskId, now: T0 })).toEqual({ decision: 'BLOCK_AUTH', steps: null });
    expect(await store.steps({ authKey: A, taskId: 'nope', now: T0 })).toEqual({ decision: 'NOT_FOUND', steps: null });
    expect(await store.steps({ authKey: A, taskId: fence.taskId, now: T0 + HOUR })).toEqual({ decision: 'BLOCK_EXPIRED', steps: null });
    // The operator reads any task's journal, expired or not, without an auth key.
    expect(await store.taskSteps({ taskId: fence.taskId })).toEqual(steps);
    expect(await store.taskSteps({ taskId: 'nope' })).toEqual([]);
  });

  it('refuses a stale fence, another owner, another auth key and an unknown task, changing nothing, one line each', async () => {
    const store = await fresh('step-stale');
    const fence = await claimed(store);
    // The lease runs out and w2 takes the task over: version 3.
    const [taken] = await store.claim(claimInput('w2', T0 + LEASE + 1));
    expect(taken?.version).toBe(3);
    const refusals = [
      [fence, 'BLOCK_STALE_VERSION', 3],
      [{ ...fence, version: 3 }, 'BLOCK_STALE_VERSION', 3],
      [{ ...fence, authKey: B, owner: 'w2', version: 3 }, 'BLOCK_AUTH', null],
      [{ ...fence, taskId: 'nope' }, 'NOT_FOUND', null],
    ] as const;
    for (const [f, decision, version] of refusals) {
      const out = await record_(store, f, done(), { now: T0 + LEASE + 2 });
      expect([out.decision, out.record?.version ?? null]).toEqual([decision, version]);
    }
    expect(await journal(store, fence, T0 + LEASE + 3)).toEqual([]);
    expect((await stepLines(store, fence.taskId)).map((l) => [l.decision, l.detail])).toEqual([
      ['BLOCK_STALE_VERSION', 'charge@0 completed'],
      ['BLOCK_STALE_VERSION', 'charge@0 completed'],
      ['BLOCK_AUTH', 'charge@0 completed'],
    ]);
    const holder = { ...fence, owner: 'w2', version: 3 };
    expect((await record_(store, holder, done(), { now: T0 + LEASE + 2 })).decision).toBe('APPLY_STEP');
  });

  it('keeps the journal’s order: another name at a position, a name at another position, a final row', async () => {
    const store = await fresh('step-order');
    const fence = await claimed(store);
    expect((await record_(store, fence, done({ value: 1 }))).decision).toBe('APPLY_STEP');
    const refused = [
      done({ name: 'send-email' }), // another name at position 0
      done({ position: 1 }), // the name at another position
      done({ value: 2 }), // position 0 is completed: final
      done({ status: 'failed', error: { message: 'x' } }),
      { ...nap(0, T0 + 100), name: 'charge' }, // a sleep where a step is
    ];
    for (const step of refused) expect((await record_(store, fence, step)).decision).toBe('BLOCK_STEP_ORDER');
    expect((await journal(store, fence))!.map((s) => [s.position, s.name, s.value])).toEqual([[0, 'charge', 1]]);
    // An unfinished row is the run's to move on: a retry retries, then completes.
    const retry = (attempts: number) =>
      done({ position: 1, name: 'mail', status: 'retrying', attempts, error: { message: `boom ${attempts}`, name: 'Error' }, wakeAt: T0 });
    expect((await record_(store, fence, retry(1))).decision).toBe('APPLY_STEP');
    expect((await record_(store, fence, retry(2), { now: T0 + 12 })).decision).toBe('APPLY_STEP');
    expect((await journal(store, fence))![1]).toMatchObject({
      status: 'retrying',
      attempts: 2,
      error: { message: 'boom 2', name: 'Error' },
      wakeAt: T0,
      updatedAt: T0 + 12,
    });
    expect((await record_(store, fence, done({ position: 1, name: 'mail', attempts: 3, startedAt: T0 + 13 }), { now: T0 + 14 })).decision).toBe('APPLY_STEP');
    // A replaced row keeps when the step started.
    expect((await journal(store, fence))![1]).toMatchObject({
      status: 'completed',
      attempts: 3,
      error: null,
      wakeAt: null,
      startedAt: T0 + 1,
      updatedAt: T0 + 14,
    });
  });

  it('keeps patch markers in a namespace of their own, marks a passed sleep woke, and keeps the concurrent flag', async () => {
    const store = await fresh('step-markers');
    const fence = await claimed(store);
    expect((await record_(store, fence, done({ position: 0, name: 'ship', value: 1, concurrent: true }))).decision).toBe('APPLY_STEP');
    // A gate may carry a step's name; a second marker of one id is refused, at its position or another.
    const marker = (position: number): StepWrite => ({ position, name: 'ship', kind: 'patch', status: 'completed', attempts: 0, startedAt: T0 + 1 });
    expect((await record_(store, fence, marker(1))).decision).toBe('APPLY_STEP');
    expect((await record_(store, fence, marker(1))).decision).toBe('BLOCK_STEP_ORDER');
    expect((await record_(store, fence, marker(2))).decision).toBe('BLOCK_STEP_ORDER');
    // A marker has no other status.
    await expect(record_(store, fence, Object.assign(marker(2), { status: 'failed', error: { message: 'x' } }))).rejects.toSatisfy((e) =>
      isTasklatchError(e, 'INVALID_INPUT'),
    );
    // A sleep passed once its time came: woke, final, its wake time kept; not before its time.
    expect((await record_(store, fence, nap(2, T0 + 5))).decision).toBe('APPLY_STEP');
    expect((await record_(store, fence, { ...nap(2, T0 + 5), status: 'woke' }, { now: T0 + 4 })).decision).toBe('BLOCK_STEP_ORDER');
    expect((await record_(store, fence, { ...nap(2, T0 + 5), status: 'woke' }, { now: T0 + 5 })).decision).toBe('APPLY_STEP');
    expect((await record_(store, fence, { ...nap(2, T0 + 5), status: 'woke' }, { now: T0 + 6 })).decision).toBe('BLOCK_STEP_ORDER');
    expect((await record_(store, fence, nap(2, T0 + 5), { now: T0 + 6 })).decision).toBe('BLOCK_STEP_ORDER');
    const steps = await journal(store, fence);
    expect(steps!.map((s) => [s.position, s.name, s.kind, s.status, s.wakeAt, s.concurrent])).toEqual([
      [0, 'ship', 'do', 'completed', null, true],
      [1, 'ship', 'patch', 'completed', null, false],
      [2, 'nap', 'sleep', 'woke', T0 + 5, false],
    ]);
    // A woke sleep is no wait: the gauge of sleeping tasks does not count it.
    expect(await store.sleepingTasks({ now: T0 + 1 })).toBe(0);
    expect((await stepLines(store, fence.taskId)).map((l) => l.detail)).toEqual(
      expect.arrayContaining(['ship@0 completed', 'patch ship@1 completed', 'nap@2 woke']),
    );
    // Seeding keeps the namespaces apart too.
    await store.seed([], [], [Object.assign({}, steps![1]!, { position: 3 })]);
    expect((await journal(store, fence))!.map((s) => `${s.position} ${s.kind} ${s.name}`)).toEqual(['0 do ship', '2 sleep nap', '3 patch ship']);
  });

  it('bounds a value’s size (the bound itself is allowed) and refuses what JSON cannot carry before any write', async () => {
    const store = await fresh('step-size');
    const fence = await claimed(store);
    // '"' + 98 characters + '"' is 100 bytes; a two-byte character makes it 101.
    expect((await record_(store, fence, done({ value: 'x'.repeat(97) + 'é' }))).decision).toBe('BLOCK_STEP_SIZE');
    expect(await journal(store, fence)).toEqual([]);
    expect((await record_(store, fence, done({ value: 'x'.repeat(98) }))).decision).toBe('APPLY_STEP');
    const before = await stepLines(store, fence.taskId);
    const error = await record_(store, fence, done({ position: 1, name: 'when', value: new Date(T0) })).catch((e: unknown) => e);
    expect(isTasklatchError(error, 'INVALID_INPUT')).toBe(true);
    expect(String(error)).toContain('step "when" returned a value JSON cannot carry exactly: a Date at $');
    const suspend = { wakeAt: T0 + 100, statusMessage: 'bad \u0000 message' };
    const badSuspend = await record_(store, fence, nap(1, T0 + 100), { suspend }).catch((e: unknown) => e);
    expect(isTasklatchError(badSuspend, 'INVALID_INPUT')).toBe(true);
    expect((await journal(store, fence))!.map((s) => s.name)).toEqual(['charge']);
    expect(await stepLines(store, fence.taskId)).toEqual(before);
    expect((await store.get({ ...fence, now: T0 + 20 })).record).toMatchObject({ version: 2, leaseOwner: 'w1', statusMessage: null });
  });

  it('bounds the journal’s rows and its values’ bytes under the lock, counting a replaced row once, and writes nothing past them', async () => {
    const store = await fresh('step-journal-bounds');
    const fence = await claimed(store);
    const bounds = { maxJournalSteps: 3, maxJournalBytes: 150 };
    // '"' + 48 characters + '"': 50 bytes each.
    const fifty = 'x'.repeat(48);
    expect((await record_(store, fence, done({ position: 0, name: 'a', value: fifty }), bounds)).decision).toBe('APPLY_STEP');
    expect((await record_(store, fence, done({ position: 1, name: 'b', value: fifty }), bounds)).decision).toBe('APPLY_STEP');
    // 100 bytes recorded: 51 more would pass the 150.
    expect((await record_(store, fence, done({ position: 2, name: 'c', value: fifty + 'y' }), bounds)).decision).toBe('BLOCK_JOURNAL_LIMIT');
    // A retry's row at position 2 is the third row; its next attempts replace it, not add to it.
    const retrying = { position: 2, name: 'c', status: 'retrying' as const, error: { message: 'down' }, wakeAt: T0 + 5 };
    expect((await record_(store, fence, done(retrying), bounds)).decision).toBe('APPLY_STEP');
    expect((await record_(store, fence, done({ ...retrying, attempts: 2 }), bounds)).decision).toBe('APPLY_STEP');
    // A fourth row is one too many, a sleep as much as a step.
    expect((await record_(store, fence, done({ position: 3, name: 'd', value: 1 }), bounds)).decision).toBe('BLOCK_JOURNAL_LIMIT');
    expect((await record_(store, fence, nap(3, T0 + 100), bounds)).decision).toBe('BLOCK_JOURNAL_LIMIT');
    // The retry completes in place with the 50 bytes left.
    expect((await record_(store, fence, done({ position: 2, name: 'c', attempts: 3, value: fifty }), bounds)).decision).toBe('APPLY_STEP');
    expect((await journal(store, fence))!.map((r) => [r.position, r.status, r.valueBytes])).toEqual([
      [0, 'completed', 50],
      [1, 'completed', 50],
      [2, 'completed', 50],
    ]);
    const lines = await stepLines(store, fence.taskId);
    expect(lines.filter((l) => l.decision === 'BLOCK_JOURNAL_LIMIT').map((l) => l.detail)).toEqual(['c@2 completed', 'd@3 completed', 'nap@3 sleeping']);
    // Without bounds (absent or null) nothing is counted.
    expect((await record_(store, fence, done({ position: 3, name: 'd', value: 1 }), { maxJournalSteps: null })).decision).toBe('APPLY_STEP');
  });

  it('refuses a step after the task ended', async () => {
    const store = await fresh('step-terminal');
    const fence = await claimed(store);
    await store.transition({ ...fence, write: { status: 'completed', expectedVersion: 2, result: ok }, correlationId: 'end', now: T0 + 5 });
    const out = await record_(store, fence, done());
    expect(out).toMatchObject({ decision: 'BLOCK_TERMINAL_REWRITE', record: { status: 'completed', version: 3 } });
    expect(await journal(store, fence)).toEqual([]);
  });

  it('a sleep suspends the task: lease given back, version + 1, no claim before the wake time, a first attempt after it', async () => {
    const store = await fresh('step-sleep');
    const fence = await claimed(store);
    const wakeAt = T0 + 30_000;
    const out = await record_(store, fence, nap(0, wakeAt), { suspend: { wakeAt, statusMessage: 'sleeping until then' } });
    expect(out).toMatchObject({
      decision: 'APPLY_STEP',
      record: {
        status: 'working',
        version: 3,
        attempt: 0,
        leaseOwner: null,
        leaseExpiresAt: null,
        statusMessage: 'sleeping until then',
        lastUpdatedAt: T0 + 10,
      },
    });
    expect((await store.get({ ...fence, now: T0 + 11 })).record).toEqual(out.record);
    // The old run is fenced off: it holds no lease and an older version.
    expect(await store.heartbeat({ fence, now: T0 + 11, leaseMs: LEASE })).toBe(false);
    expect((await record_(store, fence, done({ position: 1 }))).decision).toBe('BLOCK_STALE_VERSION');
    expect(await store.pendingDispatch()).toBe(1);
    expect([await store.sleepingTasks({ now: T0 + 11 }), await store.sleepingTasks({ now: wakeAt })]).toEqual([1, 0]);
    // Not before the wake time, whoever asks (the lease it had would have run out long before).
    expect(await store.claim(claimInput('w2', T0 + 11))).toEqual([]);
    expect(await store.claim(claimInput('w2', wakeAt - 1))).toEqual([]);
    const [woken] = await store.claim(claimInput('w2', wakeAt));
    expect(woken).toMatchObject({ taskId: fence.taskId, version: 4, attempt: 1, leaseOwner: 'w2' });
    expect((await journal(store, fence, wakeAt))!.map((s) => [s.name, s.status, s.wakeAt])).toEqual([['nap', 'sleeping', wakeAt]]);
    // Claimed early (clock skew): the run suspends again with the same wake time; another wake is an order change.
    const refence = { ...fence, owner: 'w2', version: 4 };
    expect((await record_(store, refence, nap(0, wakeAt + 5), { now: wakeAt + 1 })).decision).toBe('BLOCK_STEP_ORDER');
    const again = await record_(store, refence, nap(0, wakeAt), { now: wakeAt + 1, suspend: { wakeAt, statusMessage: 'again' } });
    expect(again).toMatchObject({ decision: 'APPLY_STEP', record: { version: 5, leaseOwner: null } });
    expect((await stepLines(store, fence.taskId)).map((l) => [l.decision, l.version, l.detail])).toEqual([
      ['APPLY_STEP', 3, 'nap@0 sleeping'],
      ['BLOCK_STALE_VERSION', 3, 'charge@1 completed'],
      ['BLOCK_STEP_ORDER', 4, 'nap@0 sleeping'],
      ['APPLY_STEP', 5, 'nap@0 sleeping'],
    ]);
  });

  it.skipIf(harness.name === 'memory')('a suspension through one handle wakes a listener on another with the new version', async () => {
    const [writer, reader] = await freshMany('step-listen', 2);
    const fence = await claimed(writer!);
    const seen: [string | null, number | undefined][] = [];
    const stop = await reader!.listen((taskId, version) => seen.push([taskId, version]));
    try {
      const wakeAt = T0 + 30_000;
      const slept = await record_(writer!, fence, nap(0, wakeAt), { suspend: { wakeAt, statusMessage: 'zz' } });
      await until(() => (!seen.some(([, v]) => v === slept.record!.version) ? undefined : true));
      // A step that did not suspend may be told too (its version unchanged); the suspension is told with its new one.
      expect(seen.filter(([id]) => id === fence.taskId).at(-1)).toEqual([fence.taskId, 3]);
    } finally {
      await stop();
    }
  });

  it('cancels a sleeping task at once: nothing claims it at its wake time', async () => {
    const store = await fresh('step-cancel');
    const fence = await claimed(store);
    const wakeAt = T0 + 30_000;
    await record_(store, fence, nap(0, wakeAt), { suspend: { wakeAt, statusMessage: 'zz' } });
    expect(await store.cancel({ ...fence, now: T0 + 20, correlationId: 'cancel' })).toMatchObject({
      decision: 'CANCEL_TASK',
      record: { status: 'cancelled', version: 4 },
    });
    expect(await store.claim(claimInput('w2', wakeAt + 1))).toEqual([]);
    expect(await store.pendingDispatch()).toBe(0);
    expect(await store.sleepingTasks({ now: T0 + 21 })).toBe(0);
    expect((await journal(store, fence))!.map((s) => s.status)).toEqual(['sleeping']);
  });

  it('retention removes a task’s steps with it', async () => {
    const store = await fresh('step-retention');
    const fence = await claimed(store, { ttl: 1000 });
    await record_(store, fence, done({ value: 'kept until the task goes' }), { now: T0 + 5 });
    expect(await store.sweepExpired({ now: T0 + 2000, limit: 10, retentionMs: 0 })).toMatchObject({ tasks: 1 });
    // The same id again: a journal left behind would show up under it.
    await store.seed([record({ taskId: fence.taskId, authKey: A })]);
    expect(await journal(store, fence, T0)).toEqual([]);
  });

  it('seeds journal rows as they are, replacing rows at the position or with the name', async () => {
    const store = await fresh('step-seed');
    await store.seed([record({ taskId: 's' })]);
    const row = {
      taskId: 's',
      position: 0,
      name: 'a',
      kind: 'do',
      status: 'completed',
      attempts: 1,
      value: [1],
      error: null,
      valueBytes: 3,
      wakeAt: null,
      concurrent: false,
      startedAt: T0,
      updatedAt: T0,
    } as const;
    const retrying = {
      ...row,
      position: 1,
      name: 'b',
      status: 'retrying',
      attempts: 2,
      value: undefined,
      valueBytes: 0,
      error: { message: 'no' },
      wakeAt: T0 + 9,
    } as const;
    await store.seed([], [], [row, retrying]);
    await store.seed([], [], [{ ...row, position: 2, name: 'b', value: 'moved' }]);
    expect(await store.steps({ authKey: A, taskId: 's', now: T0 })).toEqual({
      decision: 'FOUND',
      steps: [row, { ...row, position: 2, name: 'b', value: 'moved' }],
    });
  });

  it('keeps an ask’s journal position with its questions, and refuses one no store could keep', async () => {
    const store = await fresh('step-ask-position');
    const fence = await claimed(store);
    await record_(store, fence, done());
    const question = (key: string) => ({ key, request: { method: 'elicitation/create', params: { message: key } } });
    const bad = await store.ask({ fence, askSeq: 0, position: -1, questions: [question('k0')], now: T0 + 11, correlationId: 'ask' }).catch((e: unknown) => e);
    expect(isTasklatchError(bad, 'INVALID_INPUT')).toBe(true);
    expect((await store.ask({ fence, askSeq: 0, position: 1, questions: [question('k1'), question('k2')], now: T0 + 11, correlationId: 'ask' })).decision).toBe(
      'APPLY_ASK',
    );
    const { inputs } = await store.inputs({ ...fence, now: T0 + 12 });
    expect(inputs!.map((q) => [q.key, q.askSeq, q.position])).toEqual([
      ['k1', 0, 1],
      ['k2', 0, 1],
    ]);
    // An ask that does not say has none, as before.
    const other = await claimed(store);
    await store.ask({ fence: other, askSeq: 0, questions: [question('k')], now: T0 + 11, correlationId: 'ask' });
    expect((await store.inputs({ ...other, now: T0 + 12 })).inputs![0]).not.toHaveProperty('position');
    // Seeded questions keep theirs.
    await store.seed([], [{ ...inputs![0]!, key: 'k3', position: 4 }]);
    expect((await store.inputs({ ...fence, now: T0 + 12 })).inputs!.map((q) => q.position)).toEqual([1, 1, 4]);
  });

  it('only the holder records: a stale run racing its successor over many handles never lands a row', async () => {
    const handles = await freshMany('step-race', 3);
    const store = handles[0]!;
    const fence = await claimed(store);
    const [taken] = await store.claim(claimInput('w2', T0 + LEASE + 1));
    const holder = { ...fence, owner: 'w2', version: taken!.version };
    const now = T0 + LEASE + 2;
    const outs = await Promise.all(
      Array.from({ length: 24 }, (_, i) => {
        const [f, name] = i % 2 === 0 ? [fence, `stale-${i}`] : [holder, `held-${i}`];
        return handles[i % 3]!.recordStep({ fence: f, step: done({ position: i, name }), maxStepBytes: 100, now, correlationId: `race-${i}` });
      }),
    );
    expect(tally(outs.map((o) => o.decision))).toEqual({ APPLY_STEP: 12, BLOCK_STALE_VERSION: 12 });
    expect((await journal(store, fence, now))!.every((s) => s.name.startsWith('held-'))).toBe(true);
  });

  it('a claim racing the old run’s step: the step lands before the takeover or is refused after it', async () => {
    const handles = await freshMany('step-claim-race', 2);
    for (let round = 0; round < 6; round++) {
      const fence = await claimed(handles[0]!);
      const now = T0 + LEASE + 1;
      const [step, claims] = await Promise.all([
        handles[round % 2]!.recordStep({ fence, step: done(), maxStepBytes: 100, now, correlationId: 'late' }),
        handles[(round + 1) % 2]!.claim(claimInput('w2', now)),
      ]);
      // A claimer skips a task whose row a writer holds locked (PostgreSQL SKIP LOCKED): the step
      // was first, and the next claim takes the task over.
      if (claims.length === 0) expect(step.decision).toBe('APPLY_STEP');
      const taken = claims.length > 0 ? claims : await handles[0]!.claim(claimInput('w2', now));
      expect(taken.map((c) => c.taskId)).toEqual([fence.taskId]);
      expect(['APPLY_STEP', 'BLOCK_STALE_VERSION']).toContain(step.decision);
      const names = (await journal(handles[0]!, fence, now))!.map((s) => s.name);
      expect(names).toEqual(step.decision === 'APPLY_STEP' ? ['charge'] : []);
      await handles[0]!.cancel({ ...fence, now, correlationId: 'clear' });
    }
  });
});
