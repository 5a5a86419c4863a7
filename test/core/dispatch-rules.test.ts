import { describe, expect, it } from 'vitest';
import { decideDispatch, holdsFence, leaseHeld, type DispatchStep } from '../../src/core/dispatch-rules.js';
import type { Fence, TaskRecord } from '../../src/core/types.js';
import { T0, record } from '../support/records.js';

// The fake clock is T0; every record below is read at it.
const MAX = 3;
const leased = (o: Partial<TaskRecord> = {}) => record({ leaseOwner: 'w1', leaseExpiresAt: T0 + 1, attempt: 1, ...o });

interface DispatchRow {
  name: string;
  task: TaskRecord | null;
  maxAttempts?: number;
  expect: DispatchStep;
}

const dispatchRows: DispatchRow[] = [
  // 1. gone, finished or expired: the entry closes, before status, lease or attempts count
  { name: 'no stored task', task: null, expect: { kind: 'close' } },
  { name: 'completed', task: record({ status: 'completed' }), expect: { kind: 'close' } },
  { name: 'failed', task: record({ status: 'failed' }), expect: { kind: 'close' } },
  { name: 'cancelled while leased', task: leased({ status: 'cancelled' }), expect: { kind: 'close' } },
  { name: 'expired exactly now', task: record({ expiresAt: T0 }), expect: { kind: 'close' } },
  { name: 'expired with a held lease', task: leased({ expiresAt: T0 - 1 }), expect: { kind: 'close' } },
  { name: 'expired, out of attempts', task: record({ expiresAt: T0, attempt: 9 }), expect: { kind: 'close' } },
  { name: 'expired while waiting for input', task: record({ status: 'input_required', expiresAt: T0 }), expect: { kind: 'close' } },
  // 2. waiting for input: left as it is, whatever its lease or attempts
  { name: 'input_required', task: record({ status: 'input_required' }), expect: { kind: 'leave' } },
  { name: 'input_required with a held lease', task: leased({ status: 'input_required' }), expect: { kind: 'leave' } },
  { name: 'input_required, out of attempts', task: record({ status: 'input_required', attempt: 9 }), expect: { kind: 'leave' } },
  // 3. a lease still running: offered again when it runs out, before attempts count
  { name: 'lease runs 1 ms more', task: leased(), expect: { kind: 'defer', until: T0 + 1 } },
  { name: 'held lease, out of attempts', task: leased({ attempt: 9, leaseExpiresAt: T0 + 500 }), expect: { kind: 'defer', until: T0 + 500 } },
  // 4. a free lease: abandon once the attempts are used up, else claim
  { name: 'lease ran out exactly now', task: leased({ leaseExpiresAt: T0 }), expect: { kind: 'claim' } },
  { name: 'owner without expiry', task: leased({ leaseExpiresAt: null }), expect: { kind: 'claim' } },
  { name: 'expiry without owner', task: leased({ leaseOwner: null }), expect: { kind: 'claim' } },
  { name: 'never claimed', task: record(), expect: { kind: 'claim' } },
  { name: 'never expires', task: record({ expiresAt: null, ttl: null }), expect: { kind: 'claim' } },
  { name: 'one attempt left', task: record({ attempt: MAX - 1 }), expect: { kind: 'claim' } },
  { name: 'attempts used up', task: record({ attempt: MAX }), expect: { kind: 'abandon' } },
  { name: 'more attempts than allowed', task: leased({ attempt: MAX + 4, leaseExpiresAt: T0 - 1 }), expect: { kind: 'abandon' } },
  { name: 'maxAttempts 0', task: record(), maxAttempts: 0, expect: { kind: 'abandon' } },
];

describe('decideDispatch', () => {
  it.each(dispatchRows)('$name → $expect.kind', (row) => {
    expect(decideDispatch(row.task, T0, row.maxAttempts ?? MAX)).toEqual(row.expect);
  });

  it('leaseHeld: an owner and an expiry after now', () => {
    expect([leased(), leased({ leaseExpiresAt: T0 }), leased({ leaseOwner: null }), leased({ leaseExpiresAt: null })].map((t) => leaseHeld(t, T0))).toEqual([
      true,
      false,
      false,
      false,
    ]);
  });
});

const held = leased({ taskId: 'f-1', version: 4 });
const fence: Fence = { taskId: 'f-1', authKey: 'tenant-a/alice', owner: 'w1', version: 4 };

interface FenceRow {
  name: string;
  task: TaskRecord | null;
  fence?: Partial<Fence>;
  expect: boolean;
}

const fenceRows: FenceRow[] = [
  { name: 'the holder, as claimed', task: held, expect: true },
  { name: 'the holder after its lease ran out (not yet taken over)', task: { ...held, leaseExpiresAt: T0 - 10 }, expect: true },
  { name: 'waiting for input', task: { ...held, status: 'input_required' }, expect: true },
  { name: 'no stored task', task: null, expect: false },
  { name: 'another task', task: held, fence: { taskId: 'f-2' }, expect: false },
  { name: 'another auth key', task: held, fence: { authKey: 'tenant-b/bob' }, expect: false },
  { name: 'an older version (taken over since)', task: { ...held, version: 5 }, expect: false },
  { name: 'a version given as text', task: held, fence: { version: '4' as unknown as number }, expect: false },
  { name: 'another lease owner', task: held, fence: { owner: 'w2' }, expect: false },
  { name: 'a released lease', task: { ...held, leaseOwner: null, leaseExpiresAt: null }, expect: false },
  { name: 'completed', task: { ...held, status: 'completed' }, expect: false },
  { name: 'cancelled', task: { ...held, status: 'cancelled' }, expect: false },
  { name: 'expired exactly now', task: { ...held, expiresAt: T0 }, expect: false },
];

describe('holdsFence', () => {
  it.each(fenceRows)('$name → $expect', (row) => {
    expect(holdsFence(row.task, { ...fence, ...row.fence }, T0)).toBe(row.expect);
  });
});
