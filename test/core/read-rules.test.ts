import { describe, expect, it } from 'vitest';
import type { ReadDecision } from '../../src/core/decisions.js';
import { compareCodePoints, decideCancel, decideList, decideRead, visibleTasks } from '../../src/core/read-rules.js';
import type { ReadMethod, TaskCapabilities, TaskRecord } from '../../src/core/types.js';
import { ALL_CAPS, T0, record } from '../support/records.js';

const AUTH = 'tenant-a/alice';

interface Row {
  name: string;
  method: ReadMethod;
  task: TaskRecord | null;
  auth?: string;
  caps?: TaskCapabilities;
  expect: ReadDecision;
}

const rows: Row[] = [
  { name: 'cancel without capability, even for a missing task', method: 'tasks/cancel', task: null, caps: { list: {} }, expect: 'BLOCK_CAPABILITY' },
  { name: 'cancel without capability, other tenant', method: 'tasks/cancel', task: record(), auth: 'tenant-b/bob', caps: {}, expect: 'BLOCK_CAPABILITY' },
  { name: 'get without cancel capability is fine', method: 'tasks/get', task: record(), caps: {}, expect: 'RETURN_STATUS' },
  { name: 'result without list capability is fine', method: 'tasks/result', task: record({ status: 'failed' }), caps: { cancel: {} }, expect: 'RETURN_RESULT' },
  { name: 'get of a missing task', method: 'tasks/get', task: null, expect: 'NOT_FOUND' },
  { name: 'result of a missing task', method: 'tasks/result', task: null, expect: 'NOT_FOUND' },
  { name: 'cancel of a missing task', method: 'tasks/cancel', task: null, expect: 'NOT_FOUND' },
  { name: 'get by another tenant', method: 'tasks/get', task: record(), auth: 'tenant-b/bob', expect: 'BLOCK_AUTH' },
  {
    name: 'cancel by another tenant of a terminal task',
    method: 'tasks/cancel',
    task: record({ status: 'completed' }),
    auth: 'tenant-b/bob',
    expect: 'BLOCK_AUTH',
  },
  { name: 'result by another tenant of an expired task', method: 'tasks/result', task: record({ expiresAt: T0 - 1 }), auth: 'x/y', expect: 'BLOCK_AUTH' },
  { name: 'get of an expired task', method: 'tasks/get', task: record({ expiresAt: T0 }), expect: 'BLOCK_EXPIRED' },
  { name: 'cancel of an expired terminal task', method: 'tasks/cancel', task: record({ expiresAt: T0 - 1, status: 'failed' }), expect: 'BLOCK_EXPIRED' },
  { name: 'get working', method: 'tasks/get', task: record(), expect: 'RETURN_STATUS' },
  { name: 'get completed', method: 'tasks/get', task: record({ status: 'completed' }), expect: 'RETURN_STATUS' },
  { name: 'result working', method: 'tasks/result', task: record(), expect: 'WAIT_TERMINAL' },
  { name: 'result input_required', method: 'tasks/result', task: record({ status: 'input_required' }), expect: 'WAIT_INPUT' },
  { name: 'result completed', method: 'tasks/result', task: record({ status: 'completed' }), expect: 'RETURN_RESULT' },
  { name: 'result failed', method: 'tasks/result', task: record({ status: 'failed' }), expect: 'RETURN_RESULT' },
  { name: 'result cancelled', method: 'tasks/result', task: record({ status: 'cancelled' }), expect: 'RETURN_RESULT' },
  { name: 'cancel working', method: 'tasks/cancel', task: record(), expect: 'CANCEL_TASK' },
  { name: 'cancel input_required', method: 'tasks/cancel', task: record({ status: 'input_required' }), expect: 'CANCEL_TASK' },
  { name: 'cancel cancelled', method: 'tasks/cancel', task: record({ status: 'cancelled' }), expect: 'ALREADY_TERMINAL' },
  { name: 'cancel completed', method: 'tasks/cancel', task: record({ status: 'completed' }), expect: 'ALREADY_TERMINAL' },
  { name: 'cancel never-expiring task', method: 'tasks/cancel', task: record({ expiresAt: null }), expect: 'CANCEL_TASK' },
];

describe('read surface', () => {
  it.each(rows)('$name → $expect', (row) => {
    expect(decideRead({ capabilities: row.caps ?? ALL_CAPS, method: row.method, auth: row.auth ?? AUTH, task: row.task, now: T0 })).toBe(row.expect);
  });
});

describe('cancel of a stored record (decideCancel)', () => {
  const cancelRows: { name: string; task: TaskRecord | null; auth?: string; expect: ReturnType<typeof decideCancel> }[] = [
    { name: 'missing', task: null, expect: 'NOT_FOUND' },
    { name: 'another tenant', task: record(), auth: 'tenant-b/bob', expect: 'BLOCK_AUTH' },
    { name: 'another tenant, terminal', task: record({ status: 'completed' }), auth: 'tenant-b/bob', expect: 'BLOCK_AUTH' },
    { name: 'another tenant, expired', task: record({ expiresAt: T0 - 1 }), auth: 'tenant-b/bob', expect: 'BLOCK_AUTH' },
    { name: 'expired exactly now', task: record({ expiresAt: T0 }), expect: 'BLOCK_EXPIRED' },
    { name: 'expired terminal', task: record({ status: 'cancelled', expiresAt: T0 - 1 }), expect: 'BLOCK_EXPIRED' },
    { name: 'completed', task: record({ status: 'completed' }), expect: 'ALREADY_TERMINAL' },
    { name: 'failed', task: record({ status: 'failed' }), expect: 'ALREADY_TERMINAL' },
    { name: 'cancelled', task: record({ status: 'cancelled' }), expect: 'ALREADY_TERMINAL' },
    { name: 'working', task: record(), expect: 'CANCEL_TASK' },
    { name: 'input_required', task: record({ status: 'input_required' }), expect: 'CANCEL_TASK' },
    { name: 'working, leased', task: record({ leaseOwner: 'w1', leaseExpiresAt: T0 + 1000 }), expect: 'CANCEL_TASK' },
    { name: 'one ms before expiry', task: record({ expiresAt: T0 + 1 }), expect: 'CANCEL_TASK' },
  ];
  it.each(cancelRows)('$name → $expect', (row) => {
    expect(decideCancel(row.task, row.auth ?? AUTH, T0)).toBe(row.expect);
  });

  it('agrees with the read surface whenever the cancel capability is there', () => {
    for (const row of cancelRows) {
      expect(decideRead({ capabilities: ALL_CAPS, method: 'tasks/cancel', auth: row.auth ?? AUTH, task: row.task, now: T0 })).toBe(row.expect);
    }
  });
});

describe('list surface', () => {
  it('is blocked without the list capability', () => {
    expect(decideList({ cancel: {}, requests: { tools: { call: {} } } })).toBe('BLOCK_CAPABILITY');
    expect(decideList(ALL_CAPS)).toBe('LIST_FILTERED');
  });

  it('keeps the caller’s unexpired tasks ordered by createdAt then taskId', () => {
    const tasks = [
      record({ taskId: 'b', createdAt: 2 }),
      record({ taskId: 'a', createdAt: 2 }),
      record({ taskId: 'z', createdAt: 1 }),
      record({ taskId: 'other', createdAt: 0, authKey: 'tenant-b/bob' }),
      record({ taskId: 'gone', createdAt: 0, expiresAt: T0 }),
      record({ taskId: 'forever', createdAt: 3, expiresAt: null }),
      record({ taskId: 'done', createdAt: 1, status: 'completed' }),
    ];
    expect(visibleTasks(tasks, AUTH, T0).map((t) => t.taskId)).toEqual(['done', 'z', 'a', 'b', 'forever']);
  });

  it('orders ids by code point, as SQLite BINARY and PostgreSQL COLLATE "C" do', () => {
    const ids = ['b', 'B', 'a', '\u{1F600}', '\uFFFD', 'aa', ''];
    expect([...ids].sort(compareCodePoints)).toEqual(['', 'B', 'a', 'aa', 'b', '\uFFFD', '\u{1F600}']);
  });
});
