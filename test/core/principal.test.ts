import { describe, expect, it } from 'vitest';
import { authKeyOf, parsePrincipal, principalOf, type Principal } from '../../src/core/principal.js';

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
