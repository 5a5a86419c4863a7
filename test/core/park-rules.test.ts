import { describe, expect, it } from 'vitest';
import { PARK_DECISIONS, type ParkDecision } from '../../src/core/decisions.js';
import { decidePark, isJournalMismatch, parkDelay, parkedMessage, parkReason, parkWrite, PARK_MAX_DELAY_MS } from '../../src/core/park-rules.js';
import { duplicateStepMessage, stepOrderMessage } from '../../src/core/step-rules.js';
import type { TaskRecord } from '../../src/core/types.js';

describe('parkDelay', () => {
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [6, 32_000],
    [7, 60_000],
    [50, 60_000],
    [1e9, 60_000],
    [0, 1000],
  ])('park %d waits %d ms', (parks, ms) => {
    expect(parkDelay(parks)).toBe(ms);
  });

  it('never decreases and never passes the cap', () => {
    let last = 0;
    for (let n = 1; n < 100; n++) {
      const d = parkDelay(n);
      expect(d).toBeGreaterThanOrEqual(last);
      expect(d).toBeLessThanOrEqual(PARK_MAX_DELAY_MS);
      last = d;
    }
  });
});

describe('isJournalMismatch', () => {
  it('parks an order change and fails a name used twice', () => {
    expect(isJournalMismatch(stepOrderMessage(1, 'sleep "wait"', 'step "a2"'))).toBe(true);
    expect(isJournalMismatch(duplicateStepMessage('a'))).toBe(false);
  });
});

describe('parkWrite', () => {
  it('counts parks, keeps the streak start and names the retry time', () => {
    const reason = parkReason(stepOrderMessage(1, 'sleep "wait"', 'step "a2"'), '3f2a9c01');
    const first = parkWrite({ mark: null, reason, now: 10_000 });
    expect(first.mark).toEqual({ parkedAt: 10_000, parks: 1 });
    expect(first.wakeAt).toBe(11_000);
    expect(first.statusMessage).toBe(parkedMessage(reason, 11_000));
    expect(first.statusMessage).toMatch(
      /^parked: step order changed at position 1: the journal has sleep "wait" and this run asked for step "a2" \(version 3f2a9c01\); retrying at /,
    );
    const third = parkWrite({ mark: { parkedAt: 10_000, parks: 2 }, reason, now: 20_000 });
    expect(third.mark).toEqual({ parkedAt: 10_000, parks: 3 });
    expect(third.wakeAt).toBe(24_000);
  });

  it('leaves the version out when there is none', () => {
    expect(parkReason('x', null)).toBe('x');
  });
});

describe('decidePark', () => {
  const fence = { taskId: 't', authKey: 'k', owner: 'w', version: 3 };
  const base: Pick<TaskRecord, 'taskId' | 'authKey' | 'status' | 'version' | 'expiresAt' | 'leaseOwner'> = {
    taskId: 't',
    authKey: 'k',
    status: 'working',
    version: 3,
    expiresAt: null,
    leaseOwner: 'w',
  };
  const cases: Array<[string, typeof base | null, ParkDecision]> = [
    ['no task', null, 'NOT_FOUND'],
    ['another key', { ...base, authKey: 'x' }, 'BLOCK_AUTH'],
    ['expired', { ...base, expiresAt: 5 }, 'BLOCK_EXPIRED'],
    ['cancelled', { ...base, status: 'cancelled' }, 'BLOCK_TERMINAL_REWRITE'],
    ['completed', { ...base, status: 'completed' }, 'BLOCK_TERMINAL_REWRITE'],
    ['a later claim', { ...base, version: 4 }, 'BLOCK_STALE_VERSION'],
    ['another owner', { ...base, leaseOwner: 'v' }, 'BLOCK_STALE_VERSION'],
    ['waiting for input', { ...base, status: 'input_required' }, 'BLOCK_STALE_VERSION'],
    ['the holder', base, 'APPLY_PARK'],
  ];
  it.each(cases)('%s → %s', (_, record, decision) => {
    expect(decidePark({ record, fence, now: 10 })).toBe(decision);
  });

  it('produces only its listed decisions', () => {
    for (const [, record] of cases) expect(PARK_DECISIONS).toContain(decidePark({ record, fence, now: 10 }));
  });
});
