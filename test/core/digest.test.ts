import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { requestDigest, resultDigest } from '../../src/core/digest.js';
import { TasklatchError } from '../../src/core/errors.js';
import { parseTimestamp } from '../../src/core/time.js';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

describe('request digest', () => {
  const base = { method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-06', format: 'csv' } } };

  it('is the SHA-256 of the JCS text of method and params', () => {
    expect(requestDigest(base)).toBe(sha('{"method":"tools/call","params":{"arguments":{"format":"csv","month":"2026-06"},"name":"export_ledger"}}'));
  });

  it('ignores key order, _meta and task', () => {
    const shuffled = {
      method: 'tools/call',
      params: { task: { ttl: 5 }, arguments: { format: 'csv', month: '2026-06' }, _meta: { 'io.tasklatch/idempotency-key': 'k' }, name: 'export_ledger' },
    };
    expect(requestDigest(shuffled)).toBe(requestDigest(base));
  });

  it('changes with the tool name, an argument or the method', () => {
    expect(requestDigest({ ...base, params: { ...base.params, name: 'other' } })).not.toBe(requestDigest(base));
    expect(requestDigest({ ...base, params: { ...base.params, arguments: { month: '2026-05', format: 'csv' } } })).not.toBe(requestDigest(base));
    expect(requestDigest({ ...base, method: 'tools/other' })).not.toBe(requestDigest(base));
  });

  it('uses RFC 8785 number formatting', () => {
    expect(resultDigest({ n: 1.0, m: 1e21, z: -0 })).toBe(sha('{"m":1e+21,"n":1,"z":0}'));
  });

  it('refuses values without a JSON form', () => {
    expect(() => resultDigest(undefined)).toThrow(TasklatchError);
  });
});

describe('timestamps', () => {
  it('parses RFC 3339 with offsets and long fractions', () => {
    expect(parseTimestamp('2026-07-23T14:00:00+02:00')).toBe(Date.parse('2026-07-23T12:00:00Z'));
    expect(parseTimestamp('2026-07-23T12:00:00.123456Z')).toBe(Date.parse('2026-07-23T12:00:00.123Z'));
  });

  it.each(['2026-07-23', '2026-07-23 12:00:00Z', '2026-07-23T12:00:00', 'yesterday', '2026-13-01T00:00:00Z'])('refuses %s', (text) => {
    expect(() => parseTimestamp(text)).toThrow(/RFC 3339/);
  });
});
