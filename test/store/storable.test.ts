import { describe, expect, it } from 'vitest';
import { isStorableJson, refuseUnstorable } from '../../src/store/storable.js';

// The store's own check of a caller's strings before its work joins a batch.

describe('isStorableJson', () => {
  it.each([
    [{ s: 'plain' }, true],
    [{ s: '\ud83d\ude00 pair' }, true],
    [{ s: '\u0001 a control' }, true],
    // The text of a backslash and 'u0000' is not a NUL.
    [{ s: '\\u0000' }, true],
    [{ s: '\\ud800' }, true],
    [{ s: '\\\\u0000' }, true],
    [{ s: 'a\u0000' }, false],
    [{ s: '\\\u0000' }, false],
    [{ s: 'x\ud800' }, false],
    [{ s: '\udc00x' }, false],
    [{ s: '\ud83d\ude00\ud83d' }, false],
    [{ ['k\udbff']: 1 }, false],
  ])('%j → %s', (value, storable) => {
    expect(isStorableJson(JSON.stringify(value))).toBe(storable);
  });
});

describe('refuseUnstorable', () => {
  it('names the first field that is not storable text, nested or in an array', () => {
    expect(() => refuseUnstorable('get', { taskId: 't', authKey: 'u\ud800', now: 1 })).toThrow(/^get: authKey holds a NUL or an unpaired surrogate/);
    expect(() => refuseUnstorable('heartbeat', { fence: { taskId: 't', owner: 'w\u0000' } })).toThrow(/fence\.owner/);
    expect(() => refuseUnstorable('claim', { owner: 'w', tools: ['a', '\udc00'] })).toThrow(/tools\[1\]/);
    expect(() => refuseUnstorable('answer', { taskId: 't', responses: { ['k\u0000']: {} } })).toThrow(/a key of responses/);
    let caught: unknown;
    try {
      refuseUnstorable('get', { taskId: '\u0000' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('leaves JSON values to the JSON check of the store that keeps JSON', () => {
    expect(() => refuseUnstorable('admit', { taskId: 't', request: { params: { arguments: { s: '\u0000' } } }, responses: { k: '\ud800' } })).not.toThrow();
  });
});
