import { describe, expect, it } from 'vitest';
import type { TransitionDecision } from '../../src/core/decisions.js';
import { resultDigest } from '../../src/core/digest.js';
import { decideTransition } from '../../src/core/transition-rules.js';
import type { StatusWrite, TaskRecord } from '../../src/core/types.js';
import { T0, record } from '../support/records.js';

const AUTH = 'tenant-a/alice';
const ok = { content: [{ type: 'text', text: 'exported 12 rows' }], isError: false };
const other = { content: [{ type: 'text', text: 'exported 13 rows' }], isError: false };
const withResult = (r: unknown, o: Partial<TaskRecord> = {}) => record({ result: r, resultDigest: resultDigest(r), ...o });

interface Row {
  name: string;
  task: TaskRecord | null;
  auth?: string;
  write: StatusWrite;
  expect: TransitionDecision;
}

const rows: Row[] = [
  // 1. not found, before anything else
  { name: 'no stored task', task: null, write: { status: 'completed', expectedVersion: 1 }, expect: 'NOT_FOUND' },
  { name: 'no stored task, illegal status', task: null, write: { status: 'bogus', expectedVersion: 1 }, expect: 'NOT_FOUND' },
  // 2. auth before expiry, status and version
  { name: 'other tenant', task: record(), auth: 'tenant-b/bob', write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_AUTH' },
  { name: 'auth keys differ only in case', task: record(), auth: 'Tenant-a/alice', write: { status: 'working', expectedVersion: 1 }, expect: 'BLOCK_AUTH' },
  {
    name: 'other tenant on an expired task',
    task: record({ expiresAt: T0 - 1 }),
    auth: 'tenant-b/bob',
    write: { status: 'completed', expectedVersion: 1 },
    expect: 'BLOCK_AUTH',
  },
  { name: 'other tenant, illegal status', task: record(), auth: 'tenant-b/bob', write: { status: 'done', expectedVersion: 1 }, expect: 'BLOCK_AUTH' },
  // 3. expiry (expiresAt <= now)
  { name: 'expired exactly now', task: record({ expiresAt: T0 }), write: { status: 'completed', expectedVersion: 1 }, expect: 'BLOCK_EXPIRED' },
  { name: 'expired, illegal status', task: record({ expiresAt: T0 - 1 }), write: { status: 'done', expectedVersion: 1 }, expect: 'BLOCK_EXPIRED' },
  {
    name: 'expired terminal task',
    task: withResult(ok, { status: 'completed', expiresAt: T0 - 1 }),
    write: { status: 'completed', expectedVersion: 1, result: ok },
    expect: 'BLOCK_EXPIRED',
  },
  {
    name: 'expired, stale version',
    task: record({ expiresAt: T0 - 5, version: 4 }),
    write: { status: 'working', expectedVersion: 1 },
    expect: 'BLOCK_EXPIRED',
  },
  { name: 'one ms before expiry', task: record({ expiresAt: T0 + 1 }), write: { status: 'completed', expectedVersion: 1 }, expect: 'APPLY_TRANSITION' },
  { name: 'never expires', task: record({ expiresAt: null, ttl: null }), write: { status: 'failed', expectedVersion: 1 }, expect: 'APPLY_TRANSITION' },
  // 4. illegal status, before terminal and version checks
  { name: 'unknown status', task: record(), write: { status: 'done', expectedVersion: 1 }, expect: 'BLOCK_ILLEGAL_TRANSITION' },
  { name: 'status in other case', task: record(), write: { status: 'Completed', expectedVersion: 1 }, expect: 'BLOCK_ILLEGAL_TRANSITION' },
  { name: 'empty status', task: record(), write: { status: '', expectedVersion: 1 }, expect: 'BLOCK_ILLEGAL_TRANSITION' },
  {
    name: 'illegal status on a terminal task',
    task: record({ status: 'completed' }),
    write: { status: 'submitted', expectedVersion: 1 },
    expect: 'BLOCK_ILLEGAL_TRANSITION',
  },
  {
    name: 'illegal status with a stale version',
    task: record({ version: 5 }),
    write: { status: 'paused', expectedVersion: 1 },
    expect: 'BLOCK_ILLEGAL_TRANSITION',
  },
  // 5. terminal
  {
    name: 'same terminal, same result, stale version',
    task: withResult(ok, { status: 'completed', version: 4 }),
    write: { status: 'completed', expectedVersion: 3, result: ok },
    expect: 'IDEMPOTENT_TERMINAL',
  },
  {
    name: 'same terminal, result with other key order',
    task: withResult({ isError: false, content: ok.content }, { status: 'completed' }),
    write: { status: 'completed', expectedVersion: 9, result: ok },
    expect: 'IDEMPOTENT_TERMINAL',
  },
  {
    name: 'same terminal, different result',
    task: withResult(ok, { status: 'completed' }),
    write: { status: 'completed', expectedVersion: 1, result: other },
    expect: 'BLOCK_TERMINAL_REWRITE',
  },
  {
    name: 'same terminal, write without result',
    task: withResult(ok, { status: 'completed' }),
    write: { status: 'completed', expectedVersion: 1 },
    expect: 'IDEMPOTENT_TERMINAL',
  },
  {
    name: 'same terminal, record without result',
    task: record({ status: 'cancelled' }),
    write: { status: 'cancelled', expectedVersion: 0, result: ok },
    expect: 'IDEMPOTENT_TERMINAL',
  },
  {
    name: 'same terminal, digest only stored',
    task: record({ status: 'failed', resultDigest: resultDigest(ok) }),
    write: { status: 'failed', expectedVersion: 1, result: other },
    expect: 'BLOCK_TERMINAL_REWRITE',
  },
  {
    name: 'completed rewritten as failed',
    task: withResult(ok, { status: 'completed' }),
    write: { status: 'failed', expectedVersion: 1 },
    expect: 'BLOCK_TERMINAL_REWRITE',
  },
  {
    name: 'late completion of a cancelled task',
    task: record({ status: 'cancelled', version: 3 }),
    write: { status: 'completed', expectedVersion: 2, result: ok },
    expect: 'BLOCK_TERMINAL_REWRITE',
  },
  {
    name: 'terminal back to working',
    task: record({ status: 'failed', version: 2 }),
    write: { status: 'working', expectedVersion: 2 },
    expect: 'BLOCK_TERMINAL_REWRITE',
  },
  {
    name: 'terminal to input_required at the right version',
    task: record({ status: 'cancelled', version: 2 }),
    write: { status: 'input_required', expectedVersion: 2 },
    expect: 'BLOCK_TERMINAL_REWRITE',
  },
  // 6. version
  { name: 'stale version', task: record({ version: 4 }), write: { status: 'completed', expectedVersion: 3, result: ok }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'version from the future', task: record({ version: 4 }), write: { status: 'working', expectedVersion: 5 }, expect: 'BLOCK_STALE_VERSION' },
  {
    name: 'stale status-message update',
    task: record({ status: 'input_required', version: 2 }),
    write: { status: 'input_required', expectedVersion: 1 },
    expect: 'BLOCK_STALE_VERSION',
  },
  // 7. apply
  { name: 'working to input_required', task: record(), write: { status: 'input_required', expectedVersion: 1 }, expect: 'APPLY_TRANSITION' },
  {
    name: 'input_required to working',
    task: record({ status: 'input_required', version: 2 }),
    write: { status: 'working', expectedVersion: 2 },
    expect: 'APPLY_TRANSITION',
  },
  {
    name: 'working to working (status message)',
    task: record(),
    write: { status: 'working', expectedVersion: 1, statusMessage: '40%' },
    expect: 'APPLY_TRANSITION',
  },
  {
    name: 'input_required to cancelled',
    task: record({ status: 'input_required', version: 7 }),
    write: { status: 'cancelled', expectedVersion: 7 },
    expect: 'APPLY_TRANSITION',
  },
  {
    name: 'working to failed with an error result',
    task: record(),
    write: { status: 'failed', expectedVersion: 1, result: { ...ok, isError: true } },
    expect: 'APPLY_TRANSITION',
  },
];

describe('transition surface', () => {
  it.each(rows)('$name → $expect', (row) => {
    expect(decideTransition({ task: row.task, auth: row.auth ?? AUTH, write: row.write, now: T0 })).toBe(row.expect);
  });
});
