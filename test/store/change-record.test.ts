import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeTerminalRecord, encodeTerminalRecord, openTerminalRecord, RECORD_PAYLOAD_BYTES, recordKey } from '../../src/store/change-record.js';
import { record } from '../support/records.js';

const key = recordKey(randomBytes(32));

describe('terminal records on the change feed', () => {
  it('seal a terminal record that fits and open it as it was', () => {
    const done = record({ status: 'failed', version: 4, result: { error: { code: -32603, message: 'ünïcode secret-result' } }, resultDigest: 'd' });
    const text = encodeTerminalRecord(done, key);
    expect(text).not.toBeNull();
    expect(openTerminalRecord(text as string, key)).toEqual(done);
  });

  it('show a listener without the schema secret nothing of the record, and open nothing forged or altered', () => {
    const done = record({ status: 'completed', result: { content: [{ type: 'text', text: 'secret-result' }] } });
    const text = encodeTerminalRecord(done, key) as string;
    expect(Buffer.from(text, 'base64').toString('latin1')).not.toContain('secret-result');
    expect(text).not.toContain(done.taskId);
    expect(openTerminalRecord(text, recordKey(randomBytes(32)))).toBeNull();
    const altered = Buffer.from(text, 'base64');
    altered[altered.length - 1] = (altered[altered.length - 1] as number) ^ 1;
    expect(openTerminalRecord(altered.toString('base64'), key)).toBeNull();
    expect(openTerminalRecord(Buffer.from(JSON.stringify(done)).toString('base64'), key)).toBeNull();
    expect(openTerminalRecord('', key)).toBeNull();
  });

  it('seal each record under its own IV, past the refill of the IV pool, and open every one', () => {
    const done = record({ status: 'completed', version: 2, result: { content: [{ type: 'text', text: 'same' }] } });
    const sealed = Array.from({ length: 600 }, () => encodeTerminalRecord(done, key) as string);
    expect(new Set(sealed.map((text) => Buffer.from(text, 'base64').subarray(0, 12).toString('hex'))).size).toBe(600);
    for (const text of sealed) expect(openTerminalRecord(text, key)).toEqual(done);
  });

  it('leave out a record that is not terminal or does not fit', () => {
    expect(encodeTerminalRecord(record({ status: 'working' }), key)).toBeNull();
    expect(encodeTerminalRecord(record({ status: 'input_required' }), key)).toBeNull();
    const big = record({ status: 'completed', result: { content: [{ type: 'text', text: 'x'.repeat(RECORD_PAYLOAD_BYTES) }] } });
    expect(encodeTerminalRecord(big, key)).toBeNull();
    const fits = record({ status: 'completed', result: { content: [{ type: 'text', text: 'x'.repeat(4000) }] } });
    const sealed = encodeTerminalRecord(fits, key);
    expect(sealed).not.toBeNull();
    expect((sealed as string).length).toBeLessThanOrEqual(RECORD_PAYLOAD_BYTES);
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
