import { expect, it } from 'vitest';
import { resultDigest } from '../../../src/core/digest.js';
import { outstanding } from '../../../src/core/input-rules.js';
import type { AskInput, Fence, TaskStore } from '../../../src/store/types.js';
import { HOUR, T0 } from '../../support/records.js';
import { A, B, admission, defineStoreSuite, ok, tally } from './store-suite.js';
import { until } from '../../support/until.js';

// Inputs: a running task asks its requestor and waits; answers come through any handle. Every
// store must make the memory store's decisions and write its audit lines.

const elicit = (message: string) => ({ method: 'elicitation/create', params: { message, requestedSchema: { type: 'object' } } });
const accept = (value: unknown) => ({ action: 'accept', content: { value } });

defineStoreSuite('inputs', ({ harness, fresh, freshMany }) => {
  /** An admitted task claimed by w1 (version 2, lease until T0 + 60 s) and its fence. */
  async function claimed(store: TaskStore, overrides: Parameters<typeof admission>[0] = {}): Promise<Fence> {
    const admitted = (await store.admit(admission(overrides))).record!;
    const [held] = await store.claim({ owner: 'w1', now: T0, leaseMs: 60_000, limit: 1, maxAttempts: 5, abandonedResult: ok, correlationId: 'claim' });
    expect(held?.taskId).toBe(admitted.taskId);
    return { taskId: admitted.taskId, authKey: admitted.authKey, owner: 'w1', version: held!.version };
  }
  const ask = (store: TaskStore, fence: Fence, keys: string[], extra: Partial<AskInput> = {}) =>
    store.ask({ fence, askSeq: 0, questions: keys.map((key) => ({ key, request: elicit(key) })), now: T0 + 10, correlationId: 'ask', ...extra });
  const answer = (store: TaskStore, fence: Fence, responses: Record<string, unknown>, now = T0 + 20, authKey = fence.authKey) =>
    store.answer({ authKey, taskId: fence.taskId, responses, now, correlationId: 'answer' });
  const snapshot = async (store: TaskStore, fence: Fence, now = T0 + 30) => ({
    task: (await store.get({ authKey: fence.authKey, taskId: fence.taskId, now })).record,
    inputs: (await store.inputs({ authKey: fence.authKey, taskId: fence.taskId, now })).inputs,
  });

  it('an ask by the holder stores the questions in the order given and sets the task input_required', async () => {
    const store = await fresh('ask');
    const fence = await claimed(store);
    const asked = await ask(store, fence, ['zeta', 'alpha']);
    expect(asked.decision).toBe('APPLY_ASK');
    expect(asked.record).toMatchObject({ status: 'input_required', version: 3, lastUpdatedAt: T0 + 10 });
    const { inputs } = await snapshot(store, fence);
    expect(inputs!.map((q) => [q.key, q.askSeq, q.askedAt, q.answeredAt])).toEqual([
      ['zeta', 0, T0 + 10, null],
      ['alpha', 0, T0 + 10, null],
    ]);
    expect(inputs![0]!.request).toEqual(elicit('zeta'));
    expect(outstanding(inputs!)).toHaveLength(2);
    // Waiting for input: no worker claims it.
    expect(await store.claim({ owner: 'w2', now: T0 + 99_999, leaseMs: 1000, limit: 5, maxAttempts: 5, abandonedResult: ok, correlationId: 'c' })).toEqual([]);
    expect(await store.inputs({ authKey: B, taskId: fence.taskId, now: T0 })).toEqual({ decision: 'BLOCK_AUTH', inputs: null });
    expect(await store.inputs({ authKey: A, taskId: 'nope', now: T0 })).toEqual({ decision: 'NOT_FOUND', inputs: null });
  });

  it('refuses an ask by a stale fence, another owner, another auth key, or on a terminal, expired or waiting task, changing nothing', async () => {
    const store = await fresh('ask-refused');
    const fence = await claimed(store);
    const before = await snapshot(store, fence);
    const refusals = [
      [{ ...fence, version: 1 }, 'BLOCK_STALE_VERSION'],
      [{ ...fence, owner: 'w2' }, 'BLOCK_STALE_VERSION'],
      [{ ...fence, authKey: B }, 'BLOCK_AUTH'],
      [{ ...fence, taskId: 'nope' }, 'NOT_FOUND'],
    ] as const;
    for (const [f, decision] of refusals) {
      const out = await ask(store, f, ['k1']);
      expect(out.decision).toBe(decision);
      expect(out.record === null).toBe(decision === 'BLOCK_AUTH' || decision === 'NOT_FOUND');
    }
    expect(await snapshot(store, fence)).toEqual(before);
    expect((await ask(store, fence, ['k1'])).decision).toBe('APPLY_ASK');
    const waiting = { ...fence, version: 3 };
    expect((await ask(store, waiting, ['k2'], { askSeq: 1 })).decision).toBe('BLOCK_STALE_VERSION');

    const done = await claimed(store);
    await store.transition({
      taskId: done.taskId,
      authKey: A,
      write: { status: 'completed', expectedVersion: 2, result: ok },
      correlationId: 'w',
      now: T0 + 1,
    });
    expect(await ask(store, done, ['k1'])).toMatchObject({ decision: 'BLOCK_TERMINAL_REWRITE', record: { status: 'completed' } });
    const short = await claimed(store, { ttl: 5 });
    expect((await ask(store, short, ['k1'])).decision).toBe('BLOCK_EXPIRED');
    expect((await store.inputs({ authKey: A, taskId: done.taskId, now: T0 + 30 })).inputs).toEqual([]);
  });

  it('refuses a key asked before in the task’s lifetime, or twice in one ask', async () => {
    const store = await fresh('ask-reused');
    const fence = await claimed(store);
    expect((await ask(store, fence, ['k1', 'k1'])).decision).toBe('BLOCK_INPUT_KEY_REUSED');
    expect((await ask(store, fence, ['k1'])).decision).toBe('APPLY_ASK');
    await answer(store, fence, { k1: accept(1) });
    const [again] = await store.claim({ owner: 'w2', now: T0 + 21, leaseMs: 60_000, limit: 1, maxAttempts: 5, abandonedResult: ok, correlationId: 'c' });
    const refence = { ...fence, owner: 'w2', version: again!.version };
    const before = await snapshot(store, refence);
    expect(await ask(store, refence, ['k2', 'k1'], { askSeq: 1 })).toMatchObject({ decision: 'BLOCK_INPUT_KEY_REUSED', record: { version: again!.version } });
    expect(await snapshot(store, refence)).toEqual(before);
    expect((await ask(store, refence, ['k2'], { askSeq: 1 })).decision).toBe('APPLY_ASK');
    expect((await store.inputs({ ...refence, now: T0 + 30 })).inputs!.map((q) => [q.key, q.askSeq])).toEqual([
      ['k1', 0],
      ['k2', 1],
    ]);
  });

  it('a partial answer keeps the task waiting; the last one resumes it as a first attempt, claimable at once', async () => {
    const store = await fresh('answer');
    const fence = await claimed(store);
    await ask(store, fence, ['k1', 'k2']);
    const first = await answer(store, fence, { k1: accept('a') });
    expect(first).toMatchObject({ decision: 'APPLY_ANSWER', keys: { k1: 'APPLY_ANSWER' }, record: { status: 'input_required', version: 4, attempt: 1 } });
    const { inputs } = await snapshot(store, fence);
    expect(inputs!.map((q) => [q.key, q.response, q.answeredAt])).toEqual([
      ['k1', accept('a'), T0 + 20],
      ['k2', null, null],
    ]);
    expect(outstanding(inputs!).map((q) => q.key)).toEqual(['k2']);
    const last = await answer(store, fence, { k2: accept('b') }, T0 + 40);
    expect(last.record).toMatchObject({ status: 'working', version: 5, attempt: 0, leaseOwner: null, leaseExpiresAt: null, lastUpdatedAt: T0 + 40 });
    // Well before the asker's lease would have run out.
    const [resumed] = await store.claim({ owner: 'w2', now: T0 + 41, leaseMs: 1000, limit: 1, maxAttempts: 5, abandonedResult: ok, correlationId: 'c' });
    expect(resumed).toMatchObject({ taskId: fence.taskId, version: 6, attempt: 1, leaseOwner: 'w2' });
  });

  it('takes the same answer again, refuses a different one, ignores unknown keys and changes nothing for them', async () => {
    const store = await fresh('answer-again');
    const fence = await claimed(store);
    await ask(store, fence, ['k1', 'k2']);
    await answer(store, fence, { k1: { content: { b: 2, a: 1 }, action: 'accept' } });
    const before = await snapshot(store, fence);
    // Key order does not change the digest.
    expect(await answer(store, fence, { k1: { action: 'accept', content: { a: 1, b: 2 } } })).toMatchObject({
      decision: 'IGNORE_ANSWER',
      keys: { k1: 'IDEMPOTENT_ANSWER' },
      record: { version: 4 },
    });
    expect((await answer(store, fence, { k1: accept('other') })).keys).toEqual({ k1: 'BLOCK_ANSWER_REWRITE' });
    expect((await answer(store, fence, { never: accept(1) })).keys).toEqual({ never: 'IGNORE_UNKNOWN_KEY' });
    expect(await snapshot(store, fence)).toEqual(before);
    const mixed = await answer(store, fence, { never: 1, k1: accept('other'), k2: null });
    expect(mixed).toMatchObject({ decision: 'APPLY_ANSWER', keys: { never: 'IGNORE_UNKNOWN_KEY', k1: 'BLOCK_ANSWER_REWRITE', k2: 'APPLY_ANSWER' } });
    expect(mixed.record).toMatchObject({ status: 'working', version: 5 });
    expect((await answer(store, fence, { k2: null })).keys).toEqual({ k2: 'IDEMPOTENT_ANSWER' });
  });

  it('an answer from another auth key, after cancel or after expiry changes nothing and says nothing', async () => {
    const store = await fresh('answer-refused');
    const fence = await claimed(store);
    await ask(store, fence, ['k1']);
    const before = await snapshot(store, fence);
    expect(await answer(store, fence, { k1: accept(1) }, T0 + 20, B)).toEqual({ decision: 'BLOCK_AUTH', keys: {}, record: null });
    expect(await answer(store, { ...fence, taskId: 'nope' }, { k1: accept(1) })).toEqual({ decision: 'NOT_FOUND', keys: {}, record: null });
    expect(await answer(store, fence, { k1: accept(1) }, T0 + 2 * HOUR)).toEqual({ decision: 'BLOCK_EXPIRED', keys: {}, record: null });
    expect(await snapshot(store, fence)).toEqual(before);
    await store.cancel({ authKey: A, taskId: fence.taskId, now: T0 + 25, correlationId: 'cancel' });
    const cancelled = await snapshot(store, fence);
    expect(await answer(store, fence, { k1: accept(1) }, T0 + 26)).toEqual({ decision: 'BLOCK_TERMINAL', keys: {}, record: null });
    expect(await snapshot(store, fence)).toEqual(cancelled);
    expect(cancelled.inputs!.map((q) => q.answeredAt)).toEqual([null]);
  });

  it('32 concurrent different answers to one key over several handles: exactly one applies', async () => {
    const handles = await freshMany('answer-race', 4);
    const store = handles[0]!;
    const fence = await claimed(store);
    await ask(store, fence, ['k1']);
    const outs = await Promise.all(Array.from({ length: 32 }, (_, i) => answer(handles[i % 4]!, fence, { k1: accept(i) })));
    expect(tally(outs.map((o) => o.keys.k1!))).toEqual({ APPLY_ANSWER: 1, BLOCK_ANSWER_REWRITE: 31 });
    const winner = outs.findIndex((o) => o.decision === 'APPLY_ANSWER');
    const { task, inputs } = await snapshot(store, fence);
    expect(task).toMatchObject({ status: 'working', version: 4 });
    expect(inputs![0]!.response).toEqual(accept(winner));
  });

  it('writes the audit lines of every ask and answer', async () => {
    const store = await fresh('answer-audit');
    const fence = await claimed(store);
    await ask(store, { ...fence, version: 1 }, ['k1']);
    await ask(store, fence, ['k1', 'k2']);
    await answer(store, fence, { k1: accept(1), x: 1 });
    await answer(store, fence, { k1: accept(2) }, T0 + 20, B);
    await answer(store, fence, { k2: accept(2), k1: accept(1) }, T0 + 21);
    const trail = (await store.auditTrail({ taskId: fence.taskId })).filter((e) => e.surface === 'input');
    const line = (decision: string, status: string | null, version: number | null, detail?: string) => ({
      surface: 'input',
      decision,
      authKey: decision === 'BLOCK_AUTH' ? B : A,
      taskId: fence.taskId,
      status,
      version,
      ...(detail === undefined ? {} : { detail }),
    });
    expect(trail.map(({ at: _at, correlationId: _c, ...rest }) => rest)).toEqual([
      line('BLOCK_STALE_VERSION', 'working', 2),
      line('APPLY_ASK', 'input_required', 3, 'ask k1,k2'),
      line('APPLY_ANSWER', 'input_required', 4, 'answer k1'),
      line('IGNORE_UNKNOWN_KEY', 'input_required', 4, 'answer x'),
      line('BLOCK_AUTH', null, null),
      line('APPLY_ANSWER', 'working', 5, 'answer k2'),
      line('IDEMPOTENT_ANSWER', 'working', 5, 'answer k1'),
    ]);
  });

  it('the sweeper takes the questions with their task; seeding brings questions back as they were', async () => {
    const store = await fresh('answer-sweep');
    const fence = await claimed(store, { ttl: HOUR });
    await ask(store, fence, ['k1', 'k2']);
    await answer(store, fence, { k1: accept(1) });
    const { task, inputs } = await snapshot(store, fence);
    expect((await store.sweepExpired({ now: T0 + HOUR, limit: 10, retentionMs: 0 })).tasks).toBe(1);
    await store.seed([task!]);
    expect((await store.inputs({ ...fence, now: T0 + 30 })).inputs).toEqual([]);
    await store.seed([], inputs!);
    expect(await snapshot(store, fence)).toEqual({ task, inputs });
    expect((await answer(store, fence, { k1: accept(1), k2: accept(2) })).keys).toEqual({ k1: 'IDEMPOTENT_ANSWER', k2: 'APPLY_ANSWER' });
  });

  /** `keys` asked by a fresh claimed task at T0 + 10, each with its deadline (null: none). */
  async function asked(store: TaskStore, deadlines: Record<string, number | null>, overrides: Parameters<typeof admission>[0] = {}): Promise<Fence> {
    const fence = await claimed(store, overrides);
    const questions = Object.entries(deadlines).map(([key, deadlineAt]) => ({ key, request: elicit(key), deadlineAt }));
    expect((await store.ask({ fence, askSeq: 0, questions, now: T0 + 10, correlationId: 'ask' })).decision).toBe('APPLY_ASK');
    return fence;
  }
  const overdue = (store: TaskStore, now: number, limit = 10) => store.failOverdueInputs({ now, limit, correlationId: 'deadline' });

  it('an outstanding question past its deadline ends its task failed, naming the key, and closes its outbox entry', async () => {
    const store = await fresh('deadline');
    const fence = await asked(store, { late: T0 + 500, later: T0 + 900, open: null });
    await answer(store, fence, { open: accept(1) });
    expect(await store.inputs({ ...fence, now: T0 + 30 })).toMatchObject({
      inputs: [{ deadlineAt: T0 + 500 }, { deadlineAt: T0 + 900 }, { deadlineAt: null }],
    });
    expect(await overdue(store, T0 + 499)).toEqual([]);
    const pending = await store.pendingDispatch();
    const ended = await overdue(store, T0 + 1000);
    expect(ended).toEqual([{ taskId: fence.taskId, version: 5 }]);
    const error = { code: -32603, message: `no answer to input request "late" before its deadline (${new Date(T0 + 500).toISOString()})` };
    const { task } = await snapshot(store, fence, T0 + 1000);
    expect(task).toMatchObject({ status: 'failed', version: 5, lastUpdatedAt: T0 + 1000, result: { error }, leaseOwner: null, leaseExpiresAt: null });
    expect(task!.resultDigest).toBe(resultDigest({ error }));
    expect(await store.pendingDispatch()).toBe(pending - 1);
    const trail = await store.auditTrail({ taskId: fence.taskId });
    expect(trail.at(-1)).toMatchObject({
      at: T0 + 1000,
      surface: 'transition',
      decision: 'APPLY_TRANSITION',
      authKey: A,
      correlationId: 'deadline',
      status: 'failed',
      version: 5,
      detail: 'input deadline late',
    });
    // Ended once: the next pass finds nothing, and an answer now meets a terminal task.
    expect(await overdue(store, T0 + 2000)).toEqual([]);
    expect((await answer(store, fence, { late: accept(1) }, T0 + 2000)).decision).toBe('BLOCK_TERMINAL');
  });

  it('leaves alone a question answered in time, a cancelled task, a question without deadline and an expired task', async () => {
    const store = await fresh('deadline-spared');
    const answered = await asked(store, { k: T0 + 100 });
    await answer(store, answered, { k: accept(1) }, T0 + 50);
    const cancelled = await asked(store, { k: T0 + 100 });
    await store.cancel({ authKey: A, taskId: cancelled.taskId, now: T0 + 50, correlationId: 'cancel' });
    const open = await asked(store, { k: null });
    const short = await asked(store, { k: T0 + 100 }, { ttl: 1000 });
    const before = await Promise.all([answered, cancelled, open].map((f) => snapshot(store, f, T0 + 500)));
    // Past the short task's expiry too: an expired task is the expiry sweeper's, not a deadline's.
    expect(await overdue(store, T0 + 5000)).toEqual([]);
    expect(await Promise.all([answered, cancelled, open].map((f) => snapshot(store, f, T0 + 500)))).toEqual(before);
    expect((await store.get({ ...short, now: T0 + 999 })).record?.status).toBe('input_required');
  });

  it('ends at most `limit` tasks a pass, most overdue first', async () => {
    const store = await fresh('deadline-limit');
    const fences = [];
    for (const due of [T0 + 300, T0 + 100, T0 + 200]) fences.push(await asked(store, { a: due, b: due - 50 }));
    const first = await overdue(store, T0 + 1000, 2);
    expect(first.map((e) => e.taskId)).toEqual([fences[1]!.taskId, fences[2]!.taskId]);
    expect((await store.get({ ...fences[0]!, now: T0 + 1000 })).record?.status).toBe('input_required');
    // Each task once, with the question due first.
    expect((await store.get({ ...fences[1]!, now: T0 + 1000 })).record?.result).toMatchObject({ error: { message: expect.stringContaining('"b"') } });
    expect((await overdue(store, T0 + 1000, 2)).map((e) => e.taskId)).toEqual([fences[0]!.taskId]);
    expect(await overdue(store, T0 + 1000, 0)).toEqual([]);
  });

  it('seeding carries deadlines; concurrent passes over several handles end each task once', async () => {
    const handles = await freshMany('deadline-race', 3);
    const store = handles[0]!;
    const fences = [];
    for (let i = 0; i < 4; i++) fences.push(await asked(store, { k: T0 + 100 + i }));
    const { task, inputs } = await snapshot(store, fences[0]!);
    await store.seed(
      [task!],
      inputs!.map((q) => ({ ...q, deadlineAt: T0 + 50 })),
    );
    expect((await store.inputs({ ...fences[0]!, now: T0 + 30 })).inputs![0]!.deadlineAt).toBe(T0 + 50);
    const passes = await Promise.all(handles.flatMap((h) => [overdue(h, T0 + 1000), overdue(h, T0 + 1000)]));
    expect(
      passes
        .flat()
        .map((e) => e.taskId)
        .sort(),
    ).toEqual(fences.map((f) => f.taskId).sort());
    for (const f of fences) expect((await store.auditTrail({ taskId: f.taskId })).filter((e) => e.detail === 'input deadline k')).toHaveLength(1);
  });

  it.skipIf(harness.name === 'memory')('an answer through one handle wakes a listener on another with the new version', async () => {
    const [writer, reader] = await freshMany('answer-listen', 2);
    const seen: [string | null, number | undefined][] = [];
    const stop = await reader!.listen((taskId, version) => seen.push([taskId, version]));
    try {
      const fence = await claimed(writer!);
      const asked = await ask(writer!, fence, ['k1']);
      // The writes before the answer notify too, after they return: heard first, then set aside.
      await until(() => (!seen.some(([id, v]) => id === fence.taskId && v === asked.record!.version) ? undefined : true));
      expect(seen).toContainEqual([fence.taskId, asked.record!.version]);
      seen.length = 0;
      const answered = await answer(writer!, fence, { k1: accept(1) });
      await until(() => (!seen.some(([id]) => id === fence.taskId) ? undefined : true));
      expect(seen).toEqual([[fence.taskId, answered.record!.version]]);
    } finally {
      await stop();
    }
  });
});
