import { describe, expect, it } from 'vitest';
import { STEP_DECISIONS, type StepDecision } from '../../src/core/decisions.js';
import {
  decideFreshEntry,
  decideGateRevision,
  decidePatch,
  decideStepRecord,
  decideStepReplay,
  describeAsk,
  describeStep,
  duplicateStepMessage,
  mayRetry,
  retryDelay,
  stepOrderMessage,
  type FreshEntry,
  type JournalEntry,
  type PatchDecision,
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
  concurrent: false,
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

const patchWrite: Partial<StepWrite> = { name: 'add-a2', kind: 'patch', status: 'completed', attempts: 0 };

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
  { name: 'a sleep marked woke before its time', ...sleepAt(T0 + 1), step: wokeWrite(T0 + 1), expect: 'BLOCK_STEP_ORDER' },
  { name: 'a sleep marked woke with another wake', ...sleepAt(T0 - 100), step: wokeWrite(T0 - 50), expect: 'BLOCK_STEP_ORDER' },
  { name: 'a woke sleep is final', ...wokeAt(T0 - 100), step: wokeWrite(T0 - 100), expect: 'BLOCK_STEP_ORDER' },
  {
    name: 'a patch marker again',
    atPosition: row({ name: 'add-a2', kind: 'patch' }),
    byName: row({ name: 'add-a2', kind: 'patch' }),
    step: patchWrite,
    expect: 'BLOCK_STEP_ORDER',
  },
  { name: 'a patch marker at another position', byName: row({ name: 'add-a2', kind: 'patch', position: 3 }), step: patchWrite, expect: 'BLOCK_STEP_ORDER' },
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
  { name: 'a sleep marked woke at its time', ...sleepAt(T0), step: wokeWrite(T0), expect: 'APPLY_STEP' },
  { name: 'a sleep marked woke after its time', ...sleepAt(T0 - 100), step: wokeWrite(T0 - 100), expect: 'APPLY_STEP' },
  { name: 'a new sleep already past (woke)', step: wokeWrite(T0 - 100), expect: 'APPLY_STEP' },
  // The store passes byName from the row's namespace: a step of the gate's name is no obstacle.
  { name: 'a patch marker', step: patchWrite, expect: 'APPLY_STEP' },
];

function wokeAt(wakeAt: number): { atPosition: StepRecord; byName: StepRecord } {
  const r = row({ name: 'nap', kind: 'sleep', status: 'woke', attempts: 0, value: undefined, wakeAt });
  return { atPosition: r, byName: r };
}

function wokeWrite(wakeAt: number): Partial<StepWrite> {
  return { name: 'nap', kind: 'sleep', status: 'woke', attempts: 0, wakeAt };
}

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
  named?: StepRecord;
  kind?: 'do' | 'sleep';
  expect: StepReplay;
}

// The row is the journal's row of the name, wherever it is: its position does not matter.
const replayRows: ReplayRow[] = [
  { name: 'nothing recorded', expect: { kind: 'RUN', attempt: 1 } },
  { name: 'nothing recorded (a sleep)', kind: 'sleep', expect: { kind: 'RUN', attempt: 1 } },
  {
    name: 'a sleep of the name',
    named: row({ kind: 'sleep', status: 'sleeping', position: 4 }),
    expect: { kind: 'ORDER', position: 4, expected: 'sleep "charge"' },
  },
  {
    name: 'a step of the name, reached as a sleep',
    kind: 'sleep',
    named: row({ position: 2 }),
    expect: { kind: 'ORDER', position: 2, expected: 'step "charge"' },
  },
  { name: 'completed', named: row({ value: { id: 7 } }), expect: { kind: 'RETURN', value: { id: 7 } } },
  { name: 'completed, recorded at a later position', named: row({ value: 1, position: 9 }), expect: { kind: 'RETURN', value: 1 } },
  { name: 'completed without a value', named: row({ value: undefined }), expect: { kind: 'RETURN', value: undefined } },
  {
    name: 'failed',
    named: row({ status: 'failed', error: { message: 'card declined', name: 'PaymentError' } }),
    expect: { kind: 'THROW', error: { message: 'card declined', name: 'PaymentError' } },
  },
  { name: 'retrying, due exactly now', named: row({ status: 'retrying', attempts: 2, wakeAt: T0 }), expect: { kind: 'RUN', attempt: 3 } },
  { name: 'retrying, not yet due', named: row({ status: 'retrying', attempts: 2, wakeAt: T0 + 1 }), expect: { kind: 'WAIT', wakeAt: T0 + 1 } },
  {
    name: 'sleeping, not yet due',
    kind: 'sleep',
    named: row({ kind: 'sleep', status: 'sleeping', wakeAt: T0 + 1 }),
    expect: { kind: 'WAIT', wakeAt: T0 + 1 },
  },
  { name: 'sleeping, due exactly now', kind: 'sleep', named: row({ kind: 'sleep', status: 'sleeping', wakeAt: T0 }), expect: { kind: 'DONE', wake: true } },
  { name: 'woke', kind: 'sleep', named: row({ kind: 'sleep', status: 'woke', wakeAt: T0 - 10 }), expect: { kind: 'DONE', wake: false } },
];

describe('decideStepReplay', () => {
  it.each(replayRows)('$name → $expect.kind', (r) => {
    expect(decideStepReplay({ named: r.named, name: 'charge', kind: r.kind ?? 'do', now: T0 })).toEqual(r.expect);
  });

  it('the order messages name both sides', () => {
    expect(stepOrderMessage(3, describeStep('do', 'charge-card'), describeStep('do', 'send-email'))).toBe(
      'step order changed at position 3: the journal has step "charge-card" and this run asked for step "send-email"',
    );
    expect(describeAsk(['a'])).toBe('ask "a"');
    expect(describeStep('patch', 'add-a2')).toBe('patch "add-a2"');
    expect(duplicateStepMessage('a')).toBe('step name "a" used twice');
  });
});

const entry = (position: number, name: string, o: Partial<JournalEntry> = {}): JournalEntry => ({ position, name, kind: 'do', concurrent: false, ...o });

interface FreshRow {
  name: string;
  unreached: JournalEntry[];
  expect: FreshEntry;
}

const freshRows: FreshRow[] = [
  { name: 'the whole journal reached', unreached: [], expect: { kind: 'FRESH' } },
  // journal a, sleep; the handler now a, a2, sleep: a2 is reached while the sleep is still ahead
  {
    name: 'a step inserted before a recorded sleep',
    unreached: [entry(1, 'sleep', { kind: 'sleep' })],
    expect: { kind: 'ORDER', position: 1, expected: 'sleep "sleep"' },
  },
  {
    name: 'the lowest unreached position is named',
    unreached: [entry(5, 'b'), entry(2, 'x', { concurrent: true }), entry(3, 'a')],
    expect: { kind: 'ORDER', position: 3, expected: 'step "a"' },
  },
  {
    name: 'only concurrent rows ahead (another branch may reach them)',
    unreached: [entry(1, 'b1', { concurrent: true }), entry(2, 'b2', { concurrent: true })],
    expect: { kind: 'FRESH' },
  },
  { name: 'only a patch marker ahead (a retired gate)', unreached: [entry(1, 'add-a2', { kind: 'patch' })], expect: { kind: 'FRESH' } },
  { name: 'a stored ask ahead', unreached: [entry(0, 'approve', { kind: 'ask' })], expect: { kind: 'ORDER', position: 0, expected: 'ask "approve"' } },
];

describe('decideFreshEntry', () => {
  it.each(freshRows)('$name → $expect.kind', (r) => {
    expect(decideFreshEntry({ unreached: r.unreached })).toEqual(r.expect);
  });
});

const patchRows: { name: string; marker?: boolean; unreached: JournalEntry[]; expect: PatchDecision }[] = [
  { name: 'its marker recorded', marker: true, unreached: [entry(3, 'sleep', { kind: 'sleep' })], expect: { kind: 'REPLAY' } },
  { name: 'reached fresh (a new task)', unreached: [], expect: { kind: 'RECORD' } },
  { name: 'reached fresh, only concurrent rows ahead', unreached: [entry(2, 'b', { concurrent: true })], expect: { kind: 'RECORD' } },
  {
    name: 'an old journal that went on without it',
    unreached: [entry(1, 'sleep', { kind: 'sleep' })],
    expect: { kind: 'SKIP', position: 1, expected: 'sleep "sleep"' },
  },
];

describe('decidePatch', () => {
  it.each(patchRows)('$name → $expect.kind', (r) => {
    expect(decidePatch({ marker: r.marker === true ? row({ kind: 'patch', name: 'add-a2' }) : undefined, unreached: r.unreached })).toEqual(r.expect);
  });
});

describe('decideGateRevision', () => {
  const skipped = [
    { id: 'add-a2', position: 1 },
    { id: 'add-x', position: 4 },
    { id: 'add-y', position: 1 },
  ];
  it.each([
    // journal a, a2, rest (a2 added without a gate); the gated handler skipped a2 and then met it still ahead
    { name: 'the order check stops at the entry the gates found ahead', order: 1, expect: ['add-a2', 'add-y'] },
    { name: 'at another entry: a mismatch of its own', order: 2, expect: [] },
  ])('$name', (r) => {
    expect(decideGateRevision({ skipped, order: { position: r.order } })).toEqual(r.expect);
  });
  it('no gate skipped, nothing to revise', () => {
    expect(decideGateRevision({ skipped: [], order: { position: 0 } })).toEqual([]);
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
