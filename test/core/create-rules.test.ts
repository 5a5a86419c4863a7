import { describe, expect, it } from 'vitest';
import { decideCreate, decideLimitedAdmission, idempotencyKeyOf, isAugmented } from '../../src/core/create-rules.js';
import type { CreateDecision } from '../../src/core/decisions.js';
import { requestDigest } from '../../src/core/digest.js';
import type { TaskCapabilities, ToolDescriptor, WireRequest } from '../../src/core/types.js';
import { ALL_CAPS, HOUR, T0, record } from '../support/records.js';

const AUTH = 'tenant-a/alice';
const required: ToolDescriptor = { name: 'export_ledger', execution: { taskSupport: 'required' } };
const optional: ToolDescriptor = { name: 'summarize', execution: { taskSupport: 'optional' } };
const forbidden: ToolDescriptor = { name: 'ping', execution: { taskSupport: 'forbidden' } };
const bare: ToolDescriptor = { name: 'lookup' };
const emptyExecution: ToolDescriptor = { name: 'lookup', execution: {} };

function call(args: Record<string, unknown>, extra: Record<string, unknown> = {}): WireRequest {
  return { method: 'tools/call', params: { name: 'export_ledger', arguments: args, ...extra } };
}
const keyed = (key: string, args = { month: '2026-06' }) => call(args, { task: { ttl: 1000 }, _meta: { 'io.tasklatch/idempotency-key': key } });

interface Row {
  name: string;
  caps?: TaskCapabilities;
  tool: ToolDescriptor;
  request: WireRequest;
  prior?: ReturnType<typeof record> | null;
  headerKey?: string;
  expect: CreateDecision;
}

const priorFor = (req: WireRequest, overrides = {}) => record({ idempotencyKey: idempotencyKeyOf(req), requestDigest: requestDigest(req), ...overrides });

const rows: Row[] = [
  // Rule 1: capability, only for augmented requests, before taskSupport.
  {
    name: 'augmented without requests.tools.call',
    caps: { list: {}, cancel: {} },
    tool: optional,
    request: call({}, { task: {} }),
    expect: 'BLOCK_CAPABILITY',
  },
  { name: 'capability beats forbidden', caps: {}, tool: forbidden, request: call({}, { task: {} }), expect: 'BLOCK_CAPABILITY' },
  {
    name: 'capability beats a replayable prior',
    caps: { requests: { tools: {} } },
    tool: required,
    request: keyed('k'),
    prior: priorFor(keyed('k')),
    expect: 'BLOCK_CAPABILITY',
  },
  { name: 'plain call without capability is not blocked by it', caps: {}, tool: optional, request: call({}), expect: 'ACCEPT_NORMAL' },
  { name: 'plain call of a required tool without capability', caps: {}, tool: required, request: call({}), expect: 'BLOCK_TASK_REQUIRED' },
  // Rule 2: forbidden (explicit, absent execution, absent taskSupport).
  { name: 'augmented forbidden tool', tool: forbidden, request: call({}, { task: {} }), expect: 'BLOCK_TASK_FORBIDDEN' },
  { name: 'augmented tool without execution', tool: bare, request: call({}, { task: { ttl: 5 } }), expect: 'BLOCK_TASK_FORBIDDEN' },
  { name: 'augmented tool with empty execution', tool: emptyExecution, request: call({}, { task: {} }), expect: 'BLOCK_TASK_FORBIDDEN' },
  { name: 'forbidden beats a prior', tool: forbidden, request: keyed('k'), prior: priorFor(keyed('k')), expect: 'BLOCK_TASK_FORBIDDEN' },
  // Rule 3 and 4.
  { name: 'plain call of a required tool', tool: required, request: call({}), expect: 'BLOCK_TASK_REQUIRED' },
  {
    name: 'plain call of a required tool with a key',
    tool: required,
    request: call({}, { _meta: { 'io.tasklatch/idempotency-key': 'k' } }),
    expect: 'BLOCK_TASK_REQUIRED',
  },
  { name: 'plain call of an optional tool', tool: optional, request: call({}), expect: 'ACCEPT_NORMAL' },
  { name: 'plain call of a forbidden tool', tool: forbidden, request: call({}), expect: 'ACCEPT_NORMAL' },
  {
    name: 'plain call ignores the key and a colliding prior',
    tool: optional,
    request: call({ month: 'x' }, { _meta: { 'io.tasklatch/idempotency-key': 'k' } }),
    prior: priorFor(keyed('k')),
    expect: 'ACCEPT_NORMAL',
  },
  { name: 'task: null is not augmentation', tool: required, request: call({}, { task: null }), expect: 'BLOCK_TASK_REQUIRED' },
  // Rule 5: idempotency.
  { name: 'same key, same request', tool: required, request: keyed('k'), prior: priorFor(keyed('k')), expect: 'REPLAY_TASK' },
  {
    name: 'same key, different _meta and ttl still the same request',
    tool: required,
    request: call({ month: '2026-06' }, { task: { ttl: 99 }, _meta: { 'io.tasklatch/idempotency-key': 'k', other: 1 } }),
    prior: priorFor(keyed('k')),
    expect: 'REPLAY_TASK',
  },
  {
    name: 'same key, different argument',
    tool: required,
    request: keyed('k', { month: '2026-05' }),
    prior: priorFor(keyed('k')),
    expect: 'BLOCK_IDEMPOTENCY_COLLISION',
  },
  {
    name: 'same key, prior without a stored request',
    tool: required,
    request: keyed('k'),
    prior: record({ idempotencyKey: 'k', requestDigest: null }),
    expect: 'BLOCK_IDEMPOTENCY_COLLISION',
  },
  {
    name: 'same key, prior in another auth context',
    tool: required,
    request: keyed('k'),
    prior: priorFor(keyed('k'), { authKey: 'tenant-b/bob' }),
    expect: 'ACCEPT_TASK',
  },
  {
    name: 'same key, prior of another subject in the same tenant',
    tool: required,
    request: keyed('k'),
    prior: priorFor(keyed('k'), { authKey: 'tenant-a/alicia' }),
    expect: 'ACCEPT_TASK',
  },
  { name: 'different key', tool: required, request: keyed('k2'), prior: priorFor(keyed('k')), expect: 'ACCEPT_TASK' },
  {
    name: 'expired prior releases its key',
    tool: required,
    request: keyed('k', { month: '1999-01' }),
    prior: priorFor(keyed('k'), { expiresAt: T0 }),
    expect: 'ACCEPT_TASK',
  },
  {
    name: 'prior one ms before expiry still holds it',
    tool: required,
    request: keyed('k', { month: '1999-01' }),
    prior: priorFor(keyed('k'), { expiresAt: T0 + 1 }),
    expect: 'BLOCK_IDEMPOTENCY_COLLISION',
  },
  { name: 'prior that never expires', tool: required, request: keyed('k'), prior: priorFor(keyed('k'), { expiresAt: null, ttl: null }), expect: 'REPLAY_TASK' },
  { name: 'terminal prior still replays', tool: required, request: keyed('k'), prior: priorFor(keyed('k'), { status: 'failed' }), expect: 'REPLAY_TASK' },
  {
    name: 'no key: a prior is irrelevant',
    tool: required,
    request: call({ month: '2026-06' }, { task: {} }),
    prior: priorFor(keyed('k')),
    expect: 'ACCEPT_TASK',
  },
  {
    name: 'key from the header',
    tool: required,
    request: call({ month: '2026-06' }, { task: {} }),
    headerKey: 'k',
    prior: priorFor(keyed('k')),
    expect: 'REPLAY_TASK',
  },
  {
    name: 'non-string key is no key',
    tool: required,
    request: call({ month: '2026-06' }, { task: {}, _meta: { 'io.tasklatch/idempotency-key': 7 } }),
    prior: record({ idempotencyKey: '7', requestDigest: requestDigest(keyed('7')) }),
    expect: 'ACCEPT_TASK',
  },
  // Rule 6.
  { name: 'optional tool as a task', tool: optional, request: call({}, { task: {} }), expect: 'ACCEPT_TASK' },
  { name: 'required tool as a task', tool: required, request: call({}, { task: { ttl: HOUR } }), expect: 'ACCEPT_TASK' },
];

describe('create surface', () => {
  it.each(rows)('$name → $expect', (row) => {
    const decision = decideCreate({
      auth: AUTH,
      capabilities: row.caps ?? ALL_CAPS,
      tool: row.tool,
      request: row.request,
      idempotencyKey: row.headerKey ?? idempotencyKeyOf(row.request),
      requestDigest: requestDigest(row.request),
      prior: row.prior ?? null,
      now: T0,
    });
    expect(decision).toBe(row.expect);
  });

  it('treats only an object as task augmentation', () => {
    expect(isAugmented(call({}, { task: {} }))).toBe(true);
    expect(isAugmented(call({}, { task: [] }))).toBe(false);
    expect(isAugmented(call({}, { task: 'yes' }))).toBe(false);
    expect(isAugmented(call({}))).toBe(false);
  });
});

describe('admission under the active-task limit', () => {
  const digest = 'digest-1';
  const live = record({ taskId: 'held', idempotencyKey: 'k', requestDigest: digest });
  const rows: {
    name: string;
    key?: string | null;
    prior?: ReturnType<typeof record> | null;
    requestDigest?: string;
    maxActive?: number | null;
    activeCount: number;
    expect: ReturnType<typeof decideLimitedAdmission>;
  }[] = [
    // No limit: the count is never read.
    { name: 'no limit, far over any count', maxActive: null, activeCount: 10_000, expect: 'ACCEPT_TASK' },
    { name: 'limit absent', maxActive: undefined, activeCount: 10_000, expect: 'ACCEPT_TASK' },
    // A new task counts against the limit.
    { name: 'below the limit', maxActive: 2, activeCount: 1, expect: 'ACCEPT_TASK' },
    { name: 'at the limit', maxActive: 2, activeCount: 2, expect: 'BLOCK_TASK_LIMIT' },
    { name: 'over the limit', maxActive: 2, activeCount: 7, expect: 'BLOCK_TASK_LIMIT' },
    { name: 'limit 0', maxActive: 0, activeCount: 0, expect: 'BLOCK_TASK_LIMIT' },
    { name: 'at the limit, no key', key: null, prior: null, maxActive: 1, activeCount: 1, expect: 'BLOCK_TASK_LIMIT' },
    // Idempotency first: a replay or collision is answered even at the limit.
    { name: 'replay at the limit', prior: live, maxActive: 1, activeCount: 1, expect: 'REPLAY_TASK' },
    { name: 'replay over the limit', prior: live, maxActive: 0, activeCount: 5, expect: 'REPLAY_TASK' },
    { name: 'collision at the limit', prior: live, requestDigest: 'digest-2', maxActive: 1, activeCount: 1, expect: 'BLOCK_IDEMPOTENCY_COLLISION' },
    { name: 'replay below the limit', prior: live, maxActive: 5, activeCount: 1, expect: 'REPLAY_TASK' },
    // A holder that does not hold the key any more is no replay: the limit decides.
    { name: 'expired holder at the limit', prior: { ...live, expiresAt: T0 }, maxActive: 1, activeCount: 1, expect: 'BLOCK_TASK_LIMIT' },
    { name: 'expired holder below the limit', prior: { ...live, expiresAt: T0 }, maxActive: 2, activeCount: 1, expect: 'ACCEPT_TASK' },
    { name: 'foreign holder at the limit', prior: { ...live, authKey: 'tenant-b/bob' }, maxActive: 1, activeCount: 1, expect: 'BLOCK_TASK_LIMIT' },
    { name: 'holder, but no key asked', key: null, prior: live, maxActive: 1, activeCount: 1, expect: 'BLOCK_TASK_LIMIT' },
  ];
  it.each(rows)('$name → $expect', (row) => {
    const decision = decideLimitedAdmission({
      auth: AUTH,
      idempotencyKey: row.key === undefined ? 'k' : row.key,
      requestDigest: row.requestDigest ?? digest,
      prior: row.prior === undefined ? null : row.prior,
      now: T0,
      maxActive: row.maxActive,
      activeCount: row.activeCount,
    });
    expect(decision).toBe(row.expect);
  });
});
