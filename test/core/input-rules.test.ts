import { describe, expect, it } from 'vitest';
import { ANSWER_DECISIONS, ASK_DECISIONS, type AnswerDecision, type AskDecision } from '../../src/core/decisions.js';
import {
  answerMiss,
  awaitsInput,
  deadlineDetail,
  deadlineOutcome,
  decideAnswer,
  decideAsk,
  outstanding,
  overdueQuestion,
  type StoredInput,
} from '../../src/core/input-rules.js';
import type { Fence, TaskRecord } from '../../src/core/types.js';
import { T0, record } from '../support/records.js';

// The fake clock is T0; every record below is read at it.
const AUTH = 'tenant-a/alice';
const FENCE: Fence = { taskId: 't-1', authKey: AUTH, owner: 'w1', version: 2 };
/** A task the asking run holds: claimed by w1 at version 2, still `working`. */
const held = (o: Partial<TaskRecord> = {}) => record({ version: 2, leaseOwner: 'w1', leaseExpiresAt: T0 + 30_000, attempt: 1, ...o });

interface AskRow {
  name: string;
  task: TaskRecord | null;
  fence?: Partial<Fence>;
  keys?: string[];
  asked?: string[];
  expect: AskDecision;
}

const askRows: AskRow[] = [
  // 1. not found, before anything else
  { name: 'no stored task', task: null, expect: 'NOT_FOUND' },
  { name: 'no stored task, reused key', task: null, keys: ['k'], asked: ['k'], expect: 'NOT_FOUND' },
  // 2. the asker's auth key, before expiry, status, fence and keys
  { name: 'fence of another tenant', task: held(), fence: { authKey: 'tenant-b/bob' }, expect: 'BLOCK_AUTH' },
  { name: 'auth keys differ only in case', task: held(), fence: { authKey: 'Tenant-a/alice' }, expect: 'BLOCK_AUTH' },
  { name: 'another tenant on an expired terminal task', task: held({ status: 'failed', expiresAt: T0 - 1 }), fence: { authKey: 'x/y' }, expect: 'BLOCK_AUTH' },
  // 3. expiry (expiresAt <= now), before status and fence
  { name: 'expired exactly now', task: held({ expiresAt: T0 }), expect: 'BLOCK_EXPIRED' },
  { name: 'expired and terminal', task: held({ status: 'completed', expiresAt: T0 - 1 }), expect: 'BLOCK_EXPIRED' },
  { name: 'expired with a stale fence', task: held({ expiresAt: T0 - 1, version: 9 }), expect: 'BLOCK_EXPIRED' },
  { name: 'one ms before expiry', task: held({ expiresAt: T0 + 1 }), expect: 'APPLY_ASK' },
  { name: 'never expires', task: held({ expiresAt: null, ttl: null }), expect: 'APPLY_ASK' },
  // 4. terminal, before the fence: a finished task takes no question
  { name: 'completed', task: held({ status: 'completed' }), expect: 'BLOCK_TERMINAL_REWRITE' },
  { name: 'failed', task: held({ status: 'failed' }), expect: 'BLOCK_TERMINAL_REWRITE' },
  { name: 'cancelled while the run asks', task: held({ status: 'cancelled' }), expect: 'BLOCK_TERMINAL_REWRITE' },
  { name: 'cancelled, stale fence, reused key', task: held({ status: 'cancelled', version: 5 }), keys: ['k'], asked: ['k'], expect: 'BLOCK_TERMINAL_REWRITE' },
  // 5. the run must hold the task, `working`, before any key counts
  { name: 'already waiting for input', task: held({ status: 'input_required' }), expect: 'BLOCK_STALE_VERSION' },
  { name: 'claimed again since (version bumped)', task: held({ version: 3 }), expect: 'BLOCK_STALE_VERSION' },
  { name: 'fence of an older version', task: held(), fence: { version: 1 }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'leased to another worker', task: held({ leaseOwner: 'w2' }), expect: 'BLOCK_STALE_VERSION' },
  { name: 'lease given back', task: held({ leaseOwner: null, leaseExpiresAt: null }), expect: 'BLOCK_STALE_VERSION' },
  { name: 'fence of another task id', task: held(), fence: { taskId: 't-2' }, expect: 'BLOCK_STALE_VERSION' },
  { name: 'stale fence with a reused key', task: held({ version: 3 }), keys: ['k'], asked: ['k'], expect: 'BLOCK_STALE_VERSION' },
  // a late heartbeat's rule: the lease's own expiry is not part of the fence
  { name: 'lease ran out, nobody claimed since', task: held({ leaseExpiresAt: T0 - 1 }), expect: 'APPLY_ASK' },
  // 6. every key new for the task's lifetime, and within the ask
  { name: 'key asked by an earlier ask', task: held(), keys: ['approve'], asked: ['approve'], expect: 'BLOCK_INPUT_KEY_REUSED' },
  { name: 'one of several keys asked before', task: held(), keys: ['who', 'why'], asked: ['approve', 'why'], expect: 'BLOCK_INPUT_KEY_REUSED' },
  { name: 'the same key twice in one ask', task: held(), keys: ['who', 'who'], expect: 'BLOCK_INPUT_KEY_REUSED' },
  { name: 'keys differing only in case', task: held(), keys: ['who', 'Who'], asked: ['WHO'], expect: 'APPLY_ASK' },
  // 7. apply
  { name: 'one new key', task: held(), keys: ['approve'], expect: 'APPLY_ASK' },
  { name: 'new keys beside answered ones', task: held(), keys: ['who', 'why'], asked: ['approve'], expect: 'APPLY_ASK' },
  { name: 'no key at all', task: held(), keys: [], expect: 'APPLY_ASK' },
];

describe('decideAsk', () => {
  it.each(askRows)('$name → $expect', (row) => {
    const fence = { ...FENCE, ...row.fence };
    expect(decideAsk({ task: row.task, fence, keys: row.keys ?? ['k'], askedKeys: new Set(row.asked ?? []), now: T0 })).toBe(row.expect);
  });

  it('reaches every ask decision, and no other', () => {
    expect(new Set(askRows.map((r) => r.expect))).toEqual(new Set(ASK_DECISIONS));
  });
});

const question = (o: Partial<StoredInput> = {}): StoredInput => ({
  taskId: 't-1',
  key: 'approve',
  askSeq: 1,
  request: { method: 'elicitation/create', params: { message: 'Export?' } },
  requestDigest: 'rq',
  askedAt: T0 - 1000,
  response: null,
  responseDigest: null,
  answeredAt: null,
  deadlineAt: null,
  ...o,
});
const answered = (digest: string) => question({ response: { action: 'accept' }, responseDigest: digest, answeredAt: T0 - 10 });
const waiting = (o: Partial<TaskRecord> = {}) => record({ status: 'input_required', ...o });

interface AnswerRow {
  name: string;
  task: TaskRecord | null;
  auth?: string;
  question: StoredInput | null;
  digest?: string;
  expect: AnswerDecision;
}

const answerRows: AnswerRow[] = [
  // 1. not found, before the key is looked at
  { name: 'no stored task', task: null, question: null, expect: 'NOT_FOUND' },
  { name: 'no stored task, a stored question', task: null, question: question(), expect: 'NOT_FOUND' },
  // 2. the answerer's auth key
  { name: 'answer by another tenant', task: waiting(), auth: 'tenant-b/bob', question: question(), expect: 'BLOCK_AUTH' },
  { name: 'another tenant on an expired task', task: waiting({ expiresAt: T0 - 1 }), auth: 'tenant-b/bob', question: question(), expect: 'BLOCK_AUTH' },
  { name: 'another tenant, unknown key', task: waiting(), auth: 'x/y', question: null, expect: 'BLOCK_AUTH' },
  // 3. expiry
  { name: 'expired exactly now', task: waiting({ expiresAt: T0 }), question: question(), expect: 'BLOCK_EXPIRED' },
  { name: 'expired and cancelled', task: waiting({ status: 'cancelled', expiresAt: T0 - 1 }), question: question(), expect: 'BLOCK_EXPIRED' },
  { name: 'expired, unknown key', task: waiting({ expiresAt: T0 - 1 }), question: null, expect: 'BLOCK_EXPIRED' },
  // 4. terminal: an answer after cancel or after the end changes nothing
  { name: 'after cancel', task: waiting({ status: 'cancelled' }), question: question(), expect: 'BLOCK_TERMINAL' },
  { name: 'after the task failed on its deadline', task: waiting({ status: 'failed' }), question: question(), expect: 'BLOCK_TERMINAL' },
  { name: 'completed, unknown key', task: waiting({ status: 'completed' }), question: null, expect: 'BLOCK_TERMINAL' },
  { name: 'completed, same answer again', task: waiting({ status: 'completed' }), question: answered('d1'), digest: 'd1', expect: 'BLOCK_TERMINAL' },
  // 5. a key never asked is ignored
  { name: 'unknown key', task: waiting(), question: null, expect: 'IGNORE_UNKNOWN_KEY' },
  { name: 'unknown key while the task works', task: record(), question: null, expect: 'IGNORE_UNKNOWN_KEY' },
  // 6. an answered key: the same answer is idempotent, another one refused
  { name: 'the same answer again', task: waiting(), question: answered('d1'), digest: 'd1', expect: 'IDEMPOTENT_ANSWER' },
  { name: 'the same answer after the run resumed', task: record(), question: answered('d1'), digest: 'd1', expect: 'IDEMPOTENT_ANSWER' },
  { name: 'a different answer', task: waiting(), question: answered('d1'), digest: 'd2', expect: 'BLOCK_ANSWER_REWRITE' },
  { name: 'a different answer after the run resumed', task: record(), question: answered('d1'), digest: 'd2', expect: 'BLOCK_ANSWER_REWRITE' },
  // 7. apply
  { name: 'an outstanding question', task: waiting(), question: question(), expect: 'APPLY_ANSWER' },
  { name: 'an outstanding question past its deadline, not yet swept', task: waiting(), question: question({ deadlineAt: T0 - 1 }), expect: 'APPLY_ANSWER' },
  { name: 'one ms before expiry', task: waiting({ expiresAt: T0 + 1 }), question: question(), expect: 'APPLY_ANSWER' },
];

describe('decideAnswer', () => {
  it.each(answerRows)('$name → $expect', (row) => {
    expect(decideAnswer({ task: row.task, auth: row.auth ?? AUTH, question: row.question, responseDigest: row.digest ?? 'd1', now: T0 })).toBe(row.expect);
  });

  it('reaches every answer decision, and no other', () => {
    expect(new Set(answerRows.map((r) => r.expect))).toEqual(new Set(ANSWER_DECISIONS));
  });

  it('answerMiss: rules 1–4 alone, the same verdict decideAnswer gives before it looks at a key', () => {
    const ruled = new Set<string>(['NOT_FOUND', 'BLOCK_AUTH', 'BLOCK_EXPIRED', 'BLOCK_TERMINAL']);
    for (const row of answerRows) {
      const miss = answerMiss(row.task, row.auth ?? AUTH, T0);
      expect(miss, row.name).toBe(ruled.has(row.expect) ? row.expect : null);
    }
  });
});

describe('outstanding', () => {
  it('keeps the unanswered questions in ask order', () => {
    const a = question({ key: 'a', askSeq: 1 });
    const b = question({ key: 'b', askSeq: 1, answeredAt: T0 - 5, responseDigest: 'd' });
    const c = question({ key: 'c', askSeq: 2 });
    expect(outstanding([a, b, c]).map((q) => q.key)).toEqual(['a', 'c']);
    expect(outstanding([b])).toEqual([]);
    expect(outstanding([])).toEqual([]);
  });

  it('counts an answer by its time, not by its value (a null response is an answer)', () => {
    expect(outstanding([question({ answeredAt: T0 - 1, response: null, responseDigest: 'null' })])).toEqual([]);
  });
});

interface OverdueRow {
  name: string;
  inputs: StoredInput[];
  expect: string | null;
}

const q = (key: string, deadlineAt: number | null, answeredAt: number | null = null) =>
  question({ key, deadlineAt, answeredAt, responseDigest: answeredAt === null ? null : 'd' });

const overdueRows: OverdueRow[] = [
  { name: 'no question', inputs: [], expect: null },
  { name: 'no deadline', inputs: [q('a', null)], expect: null },
  { name: 'deadline still ahead by 1 ms', inputs: [q('a', T0 + 1)], expect: null },
  // due once deadlineAt <= now, as expiry reads expiresAt
  { name: 'deadline exactly now', inputs: [q('a', T0)], expect: 'a' },
  { name: 'deadline passed', inputs: [q('a', T0 - 1)], expect: 'a' },
  { name: 'answered past its deadline', inputs: [q('a', T0 - 1, T0 - 2)], expect: null },
  { name: 'answered one skipped for the outstanding one', inputs: [q('a', T0 - 9, T0 - 10), q('b', T0 - 1)], expect: 'b' },
  { name: 'the one due first wins', inputs: [q('a', T0 - 1), q('b', T0 - 5), q('c', T0)], expect: 'b' },
  { name: 'ask order breaks a tie', inputs: [q('b', T0 - 3), q('a', T0 - 3)], expect: 'b' },
  { name: 'one due among ones without a deadline or not yet due', inputs: [q('a', null), q('b', T0 + 100), q('c', T0 - 1)], expect: 'c' },
];

describe('overdueQuestion', () => {
  it.each(overdueRows)('$name → $expect', (row) => {
    expect(overdueQuestion(row.inputs, T0)?.key ?? null).toBe(row.expect);
  });
});

describe('awaitsInput', () => {
  it.each([
    { name: 'waiting for input', task: waiting(), expect: true },
    { name: 'waiting, never expires', task: waiting({ expiresAt: null, ttl: null }), expect: true },
    { name: 'waiting, expired exactly now', task: waiting({ expiresAt: T0 }), expect: false },
    { name: 'answered in time: working again', task: record(), expect: false },
    { name: 'cancelled meanwhile', task: waiting({ status: 'cancelled' }), expect: false },
    { name: 'finished meanwhile', task: waiting({ status: 'completed' }), expect: false },
  ])('$name → $expect', (row) => {
    expect(awaitsInput(row.task, T0)).toBe(row.expect);
  });
});

describe('the deadline outcome', () => {
  it('is a JSON-RPC internal error naming the key and the deadline', () => {
    expect(deadlineOutcome({ key: 'approve', deadlineAt: T0 })).toEqual({
      error: { code: -32603, message: 'no answer to input request "approve" before its deadline (2026-07-23T12:00:00.000Z)' },
    });
  });

  it('quotes a key as JSON and says when there was no deadline', () => {
    expect(deadlineOutcome({ key: 'a "b"', deadlineAt: null }).error.message).toBe('no answer to input request "a \\"b\\"" before its deadline (none)');
  });

  it('has an audit detail naming the key', () => {
    expect(deadlineDetail('approve')).toBe('input deadline approve');
  });
});
