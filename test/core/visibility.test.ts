import { describe, expect, it } from 'vitest';
import type { MissDecision } from '../../src/core/decisions.js';
import type { TaskRecord } from '../../src/core/types.js';
import { classifyMiss, visibleTo } from '../../src/core/visibility.js';
import { T0, record } from '../support/records.js';

// The fake clock is T0; every record below is read at it.
const AUTH = 'tenant-a/alice';

interface Row {
  name: string;
  task: TaskRecord | null;
  auth?: string;
  expect: MissDecision | null;
}

const rows: Row[] = [
  // 1. missing, before anything else
  { name: 'no stored task', task: null, expect: 'NOT_FOUND' },
  // 2. another auth key, before expiry
  { name: 'another tenant', task: record(), auth: 'tenant-b/alice', expect: 'BLOCK_AUTH' },
  { name: 'another subject of the same tenant', task: record(), auth: 'tenant-a/bob', expect: 'BLOCK_AUTH' },
  { name: 'auth keys differ only in case', task: record(), auth: 'tenant-a/Alice', expect: 'BLOCK_AUTH' },
  { name: 'a prefix of the auth key', task: record(), auth: 'tenant-a/', expect: 'BLOCK_AUTH' },
  { name: 'another tenant on an expired task', task: record({ expiresAt: T0 - 1 }), auth: 'tenant-b/bob', expect: 'BLOCK_AUTH' },
  // 3. expired once expiresAt <= now
  { name: 'expired exactly now', task: record({ expiresAt: T0 }), expect: 'BLOCK_EXPIRED' },
  { name: 'expired terminal task', task: record({ status: 'completed', expiresAt: T0 - 1 }), expect: 'BLOCK_EXPIRED' },
  // visible: status plays no part
  { name: 'one ms before expiry', task: record({ expiresAt: T0 + 1 }), expect: null },
  { name: 'never expires', task: record({ expiresAt: null, ttl: null }), expect: null },
  { name: 'terminal and unexpired', task: record({ status: 'cancelled' }), expect: null },
  { name: 'waiting for input', task: record({ status: 'input_required' }), expect: null },
];

describe('classifyMiss', () => {
  it.each(rows)('$name → $expect', (row) => {
    expect(classifyMiss(row.task, row.auth ?? AUTH, T0)).toBe(row.expect);
  });
});

describe('visibleTo', () => {
  it.each(rows.filter((row) => row.task !== null))('$name → visible when classifyMiss finds nothing', (row) => {
    expect(visibleTo(row.task!, row.auth ?? AUTH, T0)).toBe(row.expect === null);
  });
});
