import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { authKeyOf, parsePrincipal, PRINCIPAL_MAX, principalOf, principalProblem, type Principal } from '../../src/core/principal.js';
import { isStorableText } from '../../src/core/text.js';
import { hostileText } from '../support/hostile-text.js';

describe('parsePrincipal', () => {
  it.each<[string, Principal | null]>([
    ['acme/alice', { tenant: 'acme', subject: 'alice' }],
    // the first slash splits: a tenant has none, a subject may hold more
    ['acme/team/alice', { tenant: 'acme', subject: 'team/alice' }],
    ['acme//alice', { tenant: 'acme', subject: '/alice' }],
    ['a/b', { tenant: 'a', subject: 'b' }],
    [' acme / alice ', { tenant: ' acme ', subject: ' alice ' }],
    ['acme', null],
    ['', null],
    ['/alice', null],
    ['acme/', null],
    ['/', null],
    ['//', null],
  ])('%j → %j', (text, expected) => {
    expect(parsePrincipal(text)).toEqual(expected);
  });
});

describe('authKeyOf and principalOf', () => {
  it.each<Principal>([
    { tenant: 'acme', subject: 'alice' },
    { tenant: 'acme', subject: 'team/alice' },
    { tenant: 'anonymous', subject: 'anonymous' },
    { tenant: 'acme', subject: '' },
  ])('round-trips %j', (principal) => {
    expect(principalOf(authKeyOf(principal))).toEqual(principal);
  });

  it('joins tenant and subject with one slash', () => {
    expect(authKeyOf({ tenant: 'acme', subject: 'team/alice' })).toBe('acme/team/alice');
  });

  it('reads a stored key without a slash as a tenant with an empty subject', () => {
    expect(principalOf('legacy')).toEqual({ tenant: 'legacy', subject: '' });
  });

  it('parses what it joins, for every principal with both parts', () => {
    const principal = { tenant: 'acme', subject: 'a/b/c' };
    expect(parsePrincipal(authKeyOf(principal))).toEqual(principal);
  });
});

describe('principalProblem: the one check of every principal that comes in', () => {
  it.each<[Principal, null | { part: 'tenant' | 'subject'; problem: RegExp }]>([
    [{ tenant: 'acme', subject: 'alice' }, null],
    [{ tenant: 'acme', subject: 'team/alice' }, null],
    [{ tenant: 'acme ', subject: ' alice ' }, null],
    [{ tenant: 'acme:eu', subject: 'u\ud83d\ude00' }, null],
    [{ tenant: 'Ünïcödé', subject: 'e\u0301' }, null],
    [{ tenant: 't'.repeat(PRINCIPAL_MAX.tenant), subject: 's'.repeat(PRINCIPAL_MAX.subject) }, null],
    [
      { tenant: '', subject: 'alice' },
      { part: 'tenant', problem: /^is empty$/ },
    ],
    [
      { tenant: 'acme', subject: '' },
      { part: 'subject', problem: /^is empty$/ },
    ],
    [
      { tenant: 'ac/me', subject: 'alice' },
      { part: 'tenant', problem: /"\/"/ },
    ],
    [
      { tenant: 'u\ud800', subject: 'alice' },
      { part: 'tenant', problem: /unpaired surrogate \(U\+D800 at character 2\)/ },
    ],
    [
      { tenant: 'acme', subject: 'u\udc00' },
      { part: 'subject', problem: /unpaired surrogate \(U\+DC00 at character 2\)/ },
    ],
    [
      { tenant: 'acme', subject: '\ude00\ud83d' },
      { part: 'subject', problem: /unpaired surrogate \(U\+DE00 at character 1\)/ },
    ],
    [
      { tenant: 'ac\u0000me', subject: 'alice' },
      { part: 'tenant', problem: /control character \(U\+0000 at character 3\)/ },
    ],
    [
      { tenant: 'acme', subject: 'ali\u0000ce' },
      { part: 'subject', problem: /control character \(U\+0000/ },
    ],
    [
      { tenant: 'acme', subject: 'a\nb' },
      { part: 'subject', problem: /U\+000A/ },
    ],
    [
      { tenant: 'acme', subject: 'a\u001fb' },
      { part: 'subject', problem: /U\+001F/ },
    ],
    [
      { tenant: 'acme\u007f', subject: 'alice' },
      { part: 'tenant', problem: /U\+007F/ },
    ],
    [
      { tenant: 'acme', subject: '\u0085' },
      { part: 'subject', problem: /U\+0085/ },
    ],
    [
      { tenant: 'acme', subject: '\u009f' },
      { part: 'subject', problem: /U\+009F/ },
    ],
    [
      { tenant: 't'.repeat(PRINCIPAL_MAX.tenant + 1), subject: 'alice' },
      { part: 'tenant', problem: /longer than 256 characters \(257\)/ },
    ],
    [
      { tenant: 'acme', subject: 's'.repeat(PRINCIPAL_MAX.subject + 1) },
      { part: 'subject', problem: /longer than 1024 characters/ },
    ],
    // the tenant is checked first
    [
      { tenant: '\u0000', subject: '\ud800' },
      { part: 'tenant', problem: /control character/ },
    ],
  ])('%j', (principal, expected) => {
    const problem = principalProblem(principal);
    if (expected === null) expect(problem).toBeNull();
    else {
      expect(problem?.part).toBe(expected.part);
      expect(problem?.problem).toMatch(expected.problem);
    }
  });

  it('refuses parts that are not strings', () => {
    expect(principalProblem({ tenant: 7, subject: 'alice' })).toEqual({ part: 'tenant', problem: 'is not a string' });
    expect(principalProblem({ tenant: 'acme', subject: null })).toEqual({ part: 'subject', problem: 'is not a string' });
  });

  it('never accepts both of two lone surrogates that a database would store as the same U+FFFD', () => {
    for (const subject of ['u\ud800', 'u\udc00', '\ud800', '\udfff', 'a\ud800b']) expect(principalProblem({ tenant: 'acme', subject })).not.toBeNull();
    for (const tenant of ['u\ud800', 'u\udc00']) expect(principalProblem({ tenant, subject: 'alice' })).not.toBeNull();
  });

  it('parsePrincipal refuses what the check refuses', () => {
    expect(parsePrincipal('acme/u\ud800')).toBeNull();
    expect(parsePrincipal('ac\u0000me/alice')).toBeNull();
    expect(parsePrincipal(`acme/${'s'.repeat(PRINCIPAL_MAX.subject + 1)}`)).toBeNull();
  });
});

describe('one principal, one auth key', () => {
  const principal = fc.record({ tenant: hostileText, subject: hostileText });
  const accepted = principal.filter((p) => principalProblem(p) === null);

  it('the auth key of an accepted principal gives it back, and stores as itself (UTF-8 round trip, no NUL)', () => {
    fc.assert(
      fc.property(accepted, (p) => {
        const key = authKeyOf(p);
        expect(principalOf(key)).toEqual(p);
        expect(parsePrincipal(key)).toEqual(p);
        expect(isStorableText(key)).toBe(true);
        expect(new TextDecoder().decode(new TextEncoder().encode(key))).toBe(key);
      }),
      { numRuns: 600 },
    );
  });

  it('distinct accepted principals never share an auth key, nor its UTF-8 bytes', () => {
    // Pairs built to be near each other: the same pieces in another case, normalization form or
    // with a separator moved, as well as unrelated ones.
    const near = fc.tuple(
      accepted,
      fc.constantFrom<(s: string) => string>(
        (s) => s.toUpperCase(),
        (s) => s.toLowerCase(),
        (s) => s.normalize('NFD'),
        (s) => s.normalize('NFC'),
        (s) => `${s} `,
        (s) => s.replaceAll('_', ':'),
        (s) => s.replaceAll(':', '_'),
        (s) => s.replaceAll('.', '_'),
      ),
      fc.boolean(),
    );
    let distinctPairs = 0;
    fc.assert(
      fc.property(near, accepted, ([p, change, onTenant], r) => {
        const q = onTenant ? { tenant: change(p.tenant), subject: p.subject } : { tenant: p.tenant, subject: change(p.subject) };
        for (const other of [q, r]) {
          if (principalProblem(other) !== null) continue;
          const same = other.tenant === p.tenant && other.subject === p.subject;
          if (!same) distinctPairs++;
          expect(authKeyOf(other) === authKeyOf(p)).toBe(same);
          expect(Buffer.from(authKeyOf(other), 'utf8').equals(Buffer.from(authKeyOf(p), 'utf8'))).toBe(same);
        }
      }),
      { numRuns: 600 },
    );
    expect(distinctPairs).toBeGreaterThan(300);
  });

  it('refuses every principal with a control character or a lone surrogate in either part', () => {
    fc.assert(
      fc.property(principal, (p) => {
        const malformed = [p.tenant, p.subject].some((s) => /[\u0000-\u001f\u007f-\u009f]/.test(s) || !isStorableText(s));
        if (malformed) expect(principalProblem(p)).not.toBeNull();
      }),
      { numRuns: 600 },
    );
  });
});
