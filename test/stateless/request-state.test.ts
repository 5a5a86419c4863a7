import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signRoundState, verifyRoundState } from '../../src/stateless/request-state.js';

const secret = randomBytes(32);
const bound = { auth: 'acme/alice', tool: 'greet', args: { name: 'x' } };
const answers = { user_name: { action: 'accept', content: { name: 'Ada' } } };

describe('multi-round request state', () => {
  it('carries the answers back to the call it was issued for', () => {
    const token = signRoundState(secret, bound, { answers });
    expect(verifyRoundState(secret, bound, token)).toEqual({ answers });
  });

  it.each([
    ['another caller', (t: string) => verifyRoundState(secret, { ...bound, auth: 'globex/bob' }, t)],
    ['another tool', (t: string) => verifyRoundState(secret, { ...bound, tool: 'other' }, t)],
    ['other arguments', (t: string) => verifyRoundState(secret, { ...bound, args: { name: 'y' } }, t)],
    ['another store', (t: string) => verifyRoundState(randomBytes(32), bound, t)],
    [
      'an altered body',
      (t: string) =>
        verifyRoundState(secret, bound, `${Buffer.from(JSON.stringify({ v: 1, ...bound, answers: {} })).toString('base64url')}.${t.split('.')[1]}`),
    ],
    ['a suffix', (t: string) => verifyRoundState(secret, bound, `${t}-TAMPERED`)],
    ['not a string', () => verifyRoundState(secret, bound, 42)],
  ])('refuses it for %s with -32602', (_name, verify) => {
    const token = signRoundState(secret, bound, { answers });
    expect(() => verify(token)).toThrow(expect.objectContaining({ code: -32602 }));
  });
});
