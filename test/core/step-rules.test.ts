import { describe, expect, it } from 'vitest';
import { STEP_DECISIONS, type StepDecision } from '../../src/core/decisions.js';
import {
  decideStepRecord,
  decideStepReplay,
  describeAsk,
  describeStep,
  duplicateStepMessage,
  mayRetry,
  retryDelay,
  stepOrderMessage,
  type StepRecord,
  type StepReplay,
  type StepWrite,
} from '../../src/core/step-rules.js';
import type { Fence, TaskRecord } from '../../src/core/types.js';
import { T0, record } from '../support/records.js';

// The fake clock is T0. The run holds version 4 as w1.
const fence: Fence = { taskId: 't-1', authKey: 'tenant-a/alice', owner: 'w1', version: 4 };
const held = record({ version: 4, leaseOwner: 'w1', leaseExpiresAt: T0 + 30_000, attempt: 1 });
const row = (o: Partial<StepRecord>): StepRecord => ({
  taskId: 't-1',
  position: 0,
  name: 'charge',
  kind: 'do',
  status: 'completed',
  attempts: 1,
  value: 'ok',
  error: null,
  valueBytes: 4,
  wakeAt: null,
  startedAt: T0 - 10,
  updatedAt: T0 - 5,
  ...o,
});
const write = (o: Partial<StepWrite> = {}): StepWrite => ({ position: 0, name: 'charge', kind: 'do', status: 'completed', attempts: 1, startedAt: T0, ...o });

interface RecordRow {
  name: string;
  task?: TaskRecord | null;
  auth?: string;
  fence?: Partial<Fence>;
  atPosition?: StepRecord;
  byName?: StepRecord;
  /** The rest of the journal (default: 10 rows of 1000 bytes, bounds 20 rows and 10,100 bytes). */
  others?: { steps: number; bytes: number };
  step?: Partial<StepWrite>;
  valueBytes?: number;
  expect: StepDecision;
}

const recordRows: RecordRow[] = [
  // 1–3. the task out of the run's reach, before anything else is looked at
  { name: 'no stored task', task: null, valueBytes: 10 ** 9, expect: 'NOT_FOUND' },
  { name: 'another auth key', auth: 'tenant-b/bob', fence: { authKey: 'tenant-b/bob' }, atPosition: row({ name: 'other' }), expect: 'BLOCK_AUTH' },
  { name: 'expired exactly now', task: { ...held, expiresAt: T0 }, expect: 'BLOCK_EXPIRED' },
  { name: 'expired and terminal', task: { ...held, expiresAt: T0 - 1, status: 'completed' }, expect: 'BLOCK_EXPIRED' },
  // 4. terminal: nothing is recorded after the end, whoever asks
  { name: 'completed', task: { ...held, status: 'completed' }, expect: 'BLOCK_TERMINAL_REWRITE' },
  { name: 'cancelled while the run held it', task: { ...held, status: 'cancelled', version: 5 }, expect: 'BLOCK_TERMINAL_REWRITE' },
  { name: 'failed, with an order change pending', task: { ...held, status: 'failed' }, atPosition: row({ name: 'x' }), expect: 'BLOCK_TERMINAL_REWRITE' },
  // 5. the fence: version, owner, a working task
  { name: 'taken over since (newer version)', task: { ...held, version: 5 }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'another owner', task: { ...held, leaseOwner: 'w2' }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'lease given back (suspended)', task: { ...held, leaseOwner: null, leaseExpiresAt: null }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'waiting for input', task: { ...held, status: 'input_required' }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'version as text', fence: { version: '4' as unknown as number }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'stale fence and an order change', task: { ...held, version: 9 }, atPosition: row({ name: 'x' }), expect: 'BLOCK_STALE_VERSION' },
  { name: 'stale fence and a value too large', task: { ...held, version: 9 }, valueBytes: 999, expect: 'BLOCK_STALE_VERSION' },
  // 6. the journal's order
  { name: 'another name at the position', atPosition: row({ name: 'send-email' }), expect: 'BLOCK_STEP_ORDER' },
  { name: 'the name at another position', byName: row({ position: 3 }), expect: 'BLOCK_STEP_ORDER' },
  { name: 'a sleep where a step is', atPosition: row({ kind: 'sleep', status: 'sleeping', wakeAt: T0 + 1 }), expect: 'BLOCK_STEP_ORDER' },
  { name: 'completed already', atPosition: row({}), byName: row({}), expect: 'BLOCK_STEP_ORDER' },
  { name: 'failed already', atPosition: row({ status: 'failed' }), byName: row({ status: 'failed' }), step: { status: 'failed' }, expect: 'BLOCK_STEP_ORDER' },
  { name: 'a sleep again with another wake', ...sleepAt(T0 + 100), step: sleepWrite(T0 + 200), expect: 'BLOCK_STEP_ORDER' },
  { name: 'order change and a value too large', atPosition: row({ name: 'x' }), valueBytes: 999, expect: 'BLOCK_STEP_ORDER' },
  // 7. the value's size: the bound itself is allowed
  { name: 'one byte over the bound', valueBytes: 101, expect: 'BLOCK_STEP_SIZE' },
  { name: 'exactly the bound', valueBytes: 100, expect: 'APPLY_STEP' },
  // 8. the journal's size: rows at other positions and their values' bytes; the bounds themselves are allowed
  { name: 'a new row in a full journal', others: { steps: 20, bytes: 0 }, expect: 'BLOCK_JOURNAL_LIMIT' },
  { name: 'a new sleep in a full journal', others: { steps: 20, bytes: 0 }, step: sleepWrite(T0 + 100), expect: 'BLOCK_JOURNAL_LIMIT' },
  { name: 'the last row a journal holds', others: { steps: 19, bytes: 0 }, expect: 'APPLY_STEP' },
  {
    name: 'a retry completing in a full journal (its row is there)',
    others: { steps: 20, bytes: 0 },
    atPosition: row({ status: 'retrying', wakeAt: T0 }),
    byName: row({ status: 'retrying' }),
    expect: 'APPLY_STEP',
  },
  { name: 'a value one byte past the journal’s bytes', others: { steps: 1, bytes: 10_097 }, expect: 'BLOCK_JOURNAL_LIMIT' },
  { name: 'a value up to the journal’s bytes', others: { steps: 1, bytes: 10_096 }, expect: 'APPLY_STEP' },
  {
    name: 'a failure in a journal whose bytes are spent',
    others: { steps: 1, bytes: 10_100 },
    valueBytes: 0,
    step: { status: 'failed' },
    expect: 'APPLY_STEP',
  },
  { name: 'a sleep past a lowered byte bound', others: { steps: 1, bytes: 20_000 }, valueBytes: 0, step: sleepWrite(T0 + 100), expect: 'APPLY_STEP' },
  { name: 'a value too large in a full journal', others: { steps: 20, bytes: 10_100 }, valueBytes: 101, expect: 'BLOCK_STEP_SIZE' },
  // 9. apply
  { name: 'a new step', expect: 'APPLY_STEP' },
  { name: 'the lease ran out, not yet taken over', task: { ...held, leaseExpiresAt: T0 - 1 }, expect: 'APPLY_STEP' },
  { name: 'a retry completes', atPosition: row({ status: 'retrying', wakeAt: T0 }), byName: row({ status: 'retrying' }), expect: 'APPLY_STEP' },
  {
    name: 'a retry retries again',
    atPosition: row({ status: 'retrying' }),
    byName: row({ status: 'retrying' }),
    step: { status: 'retrying' },
    expect: 'APPLY_STEP',
  },
  { name: 'a sleep again with its own wake', ...sleepAt(T0 + 100), step: sleepWrite(T0 + 100), expect: 'APPLY_STEP' },
  { name: 'a new sleep', step: sleepWrite(T0 + 100), expect: 'APPLY_STEP' },
];

function sleepAt(wakeAt: number): { atPosition: StepRecord; byName: StepRecord } {
  const r = row({ name: 'nap', kind: 'sleep', status: 'sleeping', attempts: 0, value: undefined, wakeAt });
  return { atPosition: r, byName: r };
}

function sleepWrite(wakeAt: number): Partial<StepWrite> {
  return { name: 'nap', kind: 'sleep', status: 'sleeping', attempts: 0, wakeAt };
}

describe('decideStepRecord', () => {
  it.each(recordRows)('$name → $expect', (r) => {
    const decision = decideStepRecord({
      record: r.task === undefined ? held : r.task,
      auth: r.auth ?? fence.authKey,
      fence: { ...fence, ...r.fence },
      now: T0,
      atPosition: r.atPosition,
      byName: r.byName,
      step: write(r.step),
      valueBytes: r.valueBytes ?? 4,
      maxStepBytes: 100,
      journal: { others: r.others ?? { steps: 10, bytes: 1000 }, maxSteps: 20, maxBytes: 10_100 },
    });
    expect(decision).toBe(r.expect);
  });

  it('the rows cover every step decision', () => {
    expect(new Set(recordRows.map((r) => r.expect))).toEqual(new Set(STEP_DECISIONS));
  });
});

interface ReplayRow {
  name: string;
  journalAt?: StepRecord;
  askAt?: { keys: string[] };
  kind?: 'do' | 'sleep';
  expect: StepReplay;
}

const replayRows: ReplayRow[] = [
  { name: 'nothing recorded', expect: { kind: 'RUN', attempt: 1 } },
  { name: 'nothing recorded (a sleep)', kind: 'sleep', expect: { kind: 'RUN', attempt: 1 } },
  { name: 'an ask at the position', askAt: { keys: ['confirm', 'amount'] }, expect: { kind: 'ORDER', expected: 'ask "confirm,amount"' } },
  { name: 'an ask there, even with a row of the name', askAt: { keys: ['k'] }, journalAt: row({}), expect: { kind: 'ORDER', expected: 'ask "k"' } },
  { name: 'another name', journalAt: row({ name: 'send-email' }), expect: { kind: 'ORDER', expected: 'step "send-email"' } },
  { name: 'a sleep of the name', journalAt: row({ kind: 'sleep', status: 'sleeping' }), expect: { kind: 'ORDER', expected: 'sleep "charge"' } },
  { name: 'completed', journalAt: row({ value: { id: 7 } }), expect: { kind: 'RETURN', value: { id: 7 } } },
  { name: 'completed without a value', journalAt: row({ value: undefined }), expect: { kind: 'RETURN', value: undefined } },
  {
    name: 'failed',
    journalAt: row({ status: 'failed', error: { message: 'card declined', name: 'PaymentError' } }),
    expect: { kind: 'THROW', error: { message: 'card declined', name: 'PaymentError' } },
  },
  { name: 'retrying, due exactly now', journalAt: row({ status: 'retrying', attempts: 2, wakeAt: T0 }), expect: { kind: 'RUN', attempt: 3 } },
  { name: 'retrying, not yet due', journalAt: row({ status: 'retrying', attempts: 2, wakeAt: T0 + 1 }), expect: { kind: 'WAIT', wakeAt: T0 + 1 } },
  {
    name: 'sleeping, not yet due',
    kind: 'sleep',
    journalAt: row({ kind: 'sleep', status: 'sleeping', wakeAt: T0 + 1 }),
    expect: { kind: 'WAIT', wakeAt: T0 + 1 },
  },
  { name: 'sleeping, due exactly now', kind: 'sleep', journalAt: row({ kind: 'sleep', status: 'sleeping', wakeAt: T0 }), expect: { kind: 'DONE' } },
];

describe('decideStepReplay', () => {
  it.each(replayRows)('$name → $expect.kind', (r) => {
    expect(decideStepReplay({ journalAt: r.journalAt, askAt: r.askAt, name: 'charge', kind: r.kind ?? 'do', now: T0 })).toEqual(r.expect);
  });

  it('the order messages name both sides', () => {
    expect(stepOrderMessage(3, describeStep('do', 'charge-card'), describeStep('do', 'send-email'))).toBe(
      'step order changed at position 3: the journal has step "charge-card" and this run asked for step "send-email"',
    );
    expect(describeAsk(['a'])).toBe('ask "a"');
    expect(duplicateStepMessage('a')).toBe('step name "a" used twice');
  });
});

describe('retryDelay', () => {
  const policy = { limit: 5, baseDelayMs: 100, maxDelayMs: 1000 };
  it.each([
    { attempt: 1, random: 0.5, expect: 50 },
    { attempt: 2, random: 0.5, expect: 100 },
    { attempt: 3, random: 0.999, expect: 399 },
    { attempt: 5, random: 0.5, expect: 500 }, // 100·2^4 = 1600, capped at 1000
    { attempt: 40, random: 0.5, expect: 500 },
    { attempt: 3, random: 0, expect: 0 },
  ])('attempt $attempt, random $random → $expect ms', ({ attempt, random, expect: ms }) => {
    expect(retryDelay(attempt, policy, () => random)).toBe(ms);
  });

  it('defaults: base 1 s, at most 60 s', () => {
    expect(retryDelay(1, { limit: 1 }, () => 0.5)).toBe(500);
    expect(retryDelay(20, { limit: 1 }, () => 0.5)).toBe(30_000);
  });

  it('mayRetry: limit retries after the first attempt; no policy, none', () => {
    expect([1, 2, 3, 4].map((n) => mayRetry(n, { limit: 3 }))).toEqual([true, true, true, false]);
    expect(mayRetry(1, { limit: 0 })).toBe(false);
    expect(mayRetry(1, undefined)).toBe(false);
  });
});
