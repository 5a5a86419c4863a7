import { describe, expect, it } from 'vitest';
import { decideEventWait, decideSendEvent, isEventType, sendRefusalMessage, sendWakes } from '../../src/core/event-rules.js';

const T = 1_000_000;
const task = (o: Partial<{ authKey: string; status: string; expiresAt: number | null }> = {}) =>
  Object.assign({ authKey: 'acme/alice', status: 'working', expiresAt: T + 1000 }, o) as Parameters<typeof decideSendEvent>[0]['record'];
const base = { auth: 'acme/alice' as string | null, now: T, payloadBytes: 10, maxEventBytes: 100, pending: 0, maxPendingEvents: 2 };

describe('decideSendEvent', () => {
  it.each([
    ['no task', { record: null }, 'NOT_FOUND'],
    ['another sender', { record: task(), auth: 'beta/bob' }, 'BLOCK_AUTH'],
    ['an operator reaches any task', { record: task({ authKey: 'beta/bob' }), auth: null }, 'APPLY_EVENT'],
    ['expired, before terminal', { record: task({ status: 'completed', expiresAt: T }) }, 'BLOCK_EXPIRED'],
    ['terminal', { record: task({ status: 'cancelled' }) }, 'BLOCK_TERMINAL_REWRITE'],
    ['input_required still takes events', { record: task({ status: 'input_required' }) }, 'APPLY_EVENT'],
    ['at the byte bound', { record: task(), payloadBytes: 100 }, 'APPLY_EVENT'],
    ['one byte over', { record: task(), payloadBytes: 101 }, 'BLOCK_EVENT_SIZE'],
    ['size before the pending bound', { record: task(), payloadBytes: 101, pending: 2 }, 'BLOCK_EVENT_SIZE'],
    ['the last pending place', { record: task(), pending: 1 }, 'APPLY_EVENT'],
    ['no pending place left', { record: task(), pending: 2 }, 'BLOCK_EVENT_LIMIT'],
    ['no expiry', { record: task({ expiresAt: null }) }, 'APPLY_EVENT'],
  ] as const)('%s', (_title, input, expected) => {
    expect(decideSendEvent(Object.assign({}, base, input))).toBe(expected);
  });

  it('says every refusal, and another tenant’s task as an unknown one', () => {
    const limits = { maxEventBytes: 65536, maxPendingEvents: 64 };
    expect(sendRefusalMessage('BLOCK_AUTH', limits)).toBe(sendRefusalMessage('NOT_FOUND', limits));
    expect(sendRefusalMessage('BLOCK_EVENT_SIZE', limits)).toContain('65536');
    expect(sendRefusalMessage('BLOCK_EVENT_LIMIT', limits)).toContain('64');
  });
});

describe('decideEventWait', () => {
  it.each([
    ['an event came', { wakeAt: T + 10, event: { payload: { ok: 1 } }, now: T }, { kind: 'RECEIVE', payload: { ok: 1 } }],
    ['an event wins over a timeout that passed meanwhile', { wakeAt: T - 10, event: { payload: null }, now: T }, { kind: 'RECEIVE', payload: null }],
    ['none, the timeout passed', { wakeAt: T, event: null, now: T }, { kind: 'TIMEOUT' }],
    ['none yet', { wakeAt: T + 10, event: null, now: T }, { kind: 'SUSPEND', wakeAt: T + 10 }],
  ] as const)('%s', (_title, input, expected) => {
    expect(decideEventWait(input)).toEqual(expected);
  });
});

describe('sendWakes and event types', () => {
  it('moves the version only of a task suspended in a wait', () => {
    expect(sendWakes({ status: 'working', leaseOwner: null }, true)).toBe(true);
    expect(sendWakes({ status: 'working', leaseOwner: 'w1' }, true)).toBe(false);
    expect(sendWakes({ status: 'working', leaseOwner: null }, false)).toBe(false);
    expect(sendWakes({ status: 'input_required', leaseOwner: null }, true)).toBe(false);
  });

  it('takes text of 1 to 200 characters without control characters', () => {
    expect(['payment.succeeded', 'a', 'x'.repeat(200), 'é ✓'].every(isEventType)).toBe(true);
    expect(['', 'x'.repeat(201), 'a\nb', 'a\u0000', '\ud800', 42, null].some(isEventType)).toBe(false);
  });
});
