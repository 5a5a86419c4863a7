import { describe, expect, it } from 'vitest';
import { isTasklatchError } from '../../src/core/errors.js';
import { decodeCursor, encodeCursor } from '../../src/service/cursor.js';

const SECRET = new Uint8Array(32).fill(7);
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('list cursors', () => {
  it('refuse every edit of the signature, a last character that decodes to the same bytes included', () => {
    const cursor = encodeCursor(SECRET, 'acme/alice', { createdAt: 1, taskId: 't' });
    expect(decodeCursor(SECRET, 'acme/alice', cursor)).toEqual({ createdAt: 1, taskId: 't' });
    // A 32-byte HMAC is 43 base64url characters: the last carries 4 bits and 2 unused ones, so
    // three other characters there decode to the same bytes.
    for (const c of ALPHABET) {
      const edited = cursor.slice(0, -1) + c;
      if (edited === cursor) continue;
      expect(() => decodeCursor(SECRET, 'acme/alice', edited), edited).toThrow(expect.toSatisfy((e) => isTasklatchError(e, 'INVALID_CURSOR')));
    }
    expect(() => decodeCursor(SECRET, 'acme/bob', cursor)).toThrow('invalid cursor');
  });
});
