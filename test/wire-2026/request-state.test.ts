import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signRoundState, verifyRoundState } from '../../src/wire-2026/request-state.js';

const secret = randomBytes(32);
const bound = { auth: 'acme/alice', tool: 'greet', args: { name: 'x' } };
const answers = { user_name: { action: 'accept', content: { name: 'Ada' } } };
const T0 = 1_800_000_000_000;
const check = { now: T0, maxAgeMs: 10 * 60 * 1000 };

describe('multi-round request state', () => {
  it('carries the answers back to the call it was issued for', () => {
    const token = signRoundState(secret, bound, { answers }, T0);
    expect(verifyRoundState(secret, bound, token, check)).toEqual({ answers });
  });

  it.each([
    ['another caller', (t: string) => verifyRoundState(secret, { ...bound, auth: 'globex/bob' }, t, check)],
    ['another tool', (t: string) => verifyRoundState(secret, { ...bound, tool: 'other' }, t, check)],
    ['other arguments', (t: string) => verifyRoundState(secret, { ...bound, args: { name: 'y' } }, t, check)],
    ['another store', (t: string) => verifyRoundState(randomBytes(32), bound, t, check)],
    [
      'an altered body',
      (t: string) =>
        verifyRoundState(
          secret,
          bound,
          `${Buffer.from(JSON.stringify({ v: 2, ...bound, iat: T0, answers: {} })).toString('base64url')}.${t.split('.')[1]}`,
          check,
        ),
    ],
    ['a suffix', (t: string) => verifyRoundState(secret, bound, `${t}-TAMPERED`, check)],
    ['not a string', () => verifyRoundState(secret, bound, 42, check)],
  ])('refuses it for %s with -32602', (_name, verify) => {
    const token = signRoundState(secret, bound, { answers }, T0);
    expect(() => verify(token)).toThrow(expect.objectContaining({ code: -32602 }));
  });

  it('refuses it once it is older than the bound, at every later use (-32602)', () => {
    const token = signRoundState(secret, bound, { answers }, T0);
    expect(verifyRoundState(secret, bound, token, { ...check, now: T0 + check.maxAgeMs })).toEqual({ answers });
    for (let late = 1; late <= 5; late += 1) {
      expect(() => verifyRoundState(secret, bound, token, { ...check, now: T0 + check.maxAgeMs + late })).toThrow(
        expect.objectContaining({ code: -32602, message: expect.stringContaining('expired') }),
      );
    }
  });

  it('takes the signature only in its one canonical base64url spelling', () => {
    const token = signRoundState(secret, bound, { answers }, T0);
    const [body, signature] = token.split('.') as [string, string];
    const bytes = Buffer.from(signature, 'base64url');
    const last = signature.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // The last character carries two unused bits: its three siblings decode to the same bytes.
    const siblings = [...alphabet].filter((c) => c !== last && alphabet.indexOf(c) >> 2 === alphabet.indexOf(last) >> 2);
    const spellings = [
      ...siblings.map((c) => `${signature.slice(0, -1)}${c}`),
      `${signature}=`,
      bytes.toString('base64'),
      ` ${signature}`,
      `${signature}\n`,
      `${signature.slice(0, 20)}.${signature.slice(20)}`,
    ].filter((spelled) => spelled !== signature);
    expect(siblings).toHaveLength(3);
    for (const spelled of spellings) {
      expect(Buffer.from(spelled, 'base64url').subarray(0, 32).equals(bytes) || spelled.includes('.')).toBe(true);
      expect(() => verifyRoundState(secret, bound, `${body}.${spelled}`, check)).toThrow(expect.objectContaining({ code: -32602 }));
    }
  });
});
