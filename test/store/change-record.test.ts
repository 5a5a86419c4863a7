import { describe, expect, it } from 'vitest';
import { decodeTerminalRecord, encodeTerminalRecord, RECORD_PAYLOAD_BYTES } from '../../src/store/change-record.js';
import { record } from '../support/records.js';

describe('terminal records on the change feed', () => {
  it('encode a terminal record that fits and decode it as it was', () => {
    const done = record({ status: 'failed', version: 4, result: { error: { code: -32603, message: 'ünïcode' } }, resultDigest: 'd' });
    const text = encodeTerminalRecord(done);
    expect(text).not.toBeNull();
    expect(decodeTerminalRecord(text as string)).toEqual(done);
  });

  it('leave out a record that is not terminal or does not fit', () => {
    expect(encodeTerminalRecord(record({ status: 'working' }))).toBeNull();
    expect(encodeTerminalRecord(record({ status: 'input_required' }))).toBeNull();
    const big = record({ status: 'completed', result: { content: [{ type: 'text', text: 'é'.repeat(RECORD_PAYLOAD_BYTES / 2) }] } });
    expect(encodeTerminalRecord(big)).toBeNull();
  });

  it('decode nothing malformed or not terminal', () => {
    const done = record({ status: 'completed', result: { content: [] } });
    expect(decodeTerminalRecord('not json')).toBeNull();
    expect(decodeTerminalRecord('null')).toBeNull();
    expect(decodeTerminalRecord(JSON.stringify({ ...done, status: 'working' }))).toBeNull();
    expect(decodeTerminalRecord(JSON.stringify({ ...done, version: 1.5 }))).toBeNull();
    expect(decodeTerminalRecord(JSON.stringify({ ...done, leaseOwner: 3 }))).toBeNull();
    expect(decodeTerminalRecord(JSON.stringify({ ...done, expiresAt: 'soon' }))).toBeNull();
    const { result: _result, ...withoutResult } = done;
    expect(decodeTerminalRecord(JSON.stringify(withoutResult))).toBeNull();
  });
});
