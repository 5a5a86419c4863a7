import { LONE_SURROGATE } from './text.js';

/**
 * Who is calling: a tenant and a subject. Their join, `tenant/subject`, is the auth key every
 * task is stored under; a tenant never holds a slash, so the first slash splits a key back and
 * two principals never share a key.
 */
export interface Principal {
  tenant: string;
  subject: string;
}

/**
 * The longest tenant and subject a principal may have, in characters (UTF-16 code units, as a
 * task id's bound is counted). Long enough for any issuer's identifiers (OpenID Connect bounds
 * `sub` at 255 ASCII characters; a client id may be a URL), short enough that an auth key stays
 * a cheap index entry and a tenant can name a folder (see `pathSegmentOf`).
 */
export const PRINCIPAL_MAX = { tenant: 256, subject: 1024 } as const;

/** What is wrong with a principal: the part, and why (a short phrase that never quotes the text). */
export interface PrincipalProblem {
  part: 'tenant' | 'subject';
  problem: string;
}

// C0 controls (NUL among them), DEL and C1 controls, and any surrogate without its pair: text
// that a store refuses (PostgreSQL: NUL, lone surrogates), rewrites (two lone surrogates become one
// U+FFFD, so two callers would share a key), or that prints as nothing in a log or listing.
const MALFORMED = new RegExp(`[\\u0000-\\u001F\\u007F-\\u009F]|${LONE_SURROGATE.source}`);

/**
 * The one check of every principal that comes in (a tokens file, a token's claims, a user's
 * `authenticate`, an SDK's auth info, a flag): each part a non-empty string of well-formed
 * Unicode without control characters and at most {@link PRINCIPAL_MAX} long, the tenant without
 * `/`. Null when it passes; else the first part that fails and why. A principal that fails is
 * refused before any store sees it.
 */
export function principalProblem(principal: { readonly tenant: unknown; readonly subject: unknown }): PrincipalProblem | null {
  const tenant = partProblem(principal.tenant, PRINCIPAL_MAX.tenant);
  if (tenant !== null) return { part: 'tenant', problem: tenant };
  if ((principal.tenant as string).includes('/')) return { part: 'tenant', problem: 'holds a "/"' };
  const subject = partProblem(principal.subject, PRINCIPAL_MAX.subject);
  return subject === null ? null : { part: 'subject', problem: subject };
}

function partProblem(text: unknown, max: number): string | null {
  if (typeof text !== 'string') return 'is not a string';
  if (text === '') return 'is empty';
  if (text.length > max) return `is longer than ${max} characters (${text.length})`;
  const bad = MALFORMED.exec(text);
  if (bad === null) return null;
  const unit = bad[0].charCodeAt(0);
  const at = `U+${unit.toString(16).toUpperCase().padStart(4, '0')} at character ${bad.index + 1}`;
  return unit >= 0xd800 && unit <= 0xdfff ? `holds an unpaired surrogate (${at})` : `holds a control character (${at})`;
}

/** The auth key of a principal: `tenant/subject`. */
export function authKeyOf(principal: Principal): string {
  return `${principal.tenant}/${principal.subject}`;
}

/**
 * A stored auth key back to its principal, split at the first slash. Lenient on purpose: the
 * store takes any auth key a library user passes it, and a key without a slash reads as a tenant
 * with an empty subject rather than failing an operator's listing or a tool's context.
 */
export function principalOf(authKey: string): Principal {
  const slash = authKey.indexOf('/');
  return slash < 0 ? { tenant: authKey, subject: '' } : { tenant: authKey.slice(0, slash), subject: authKey.slice(slash + 1) };
}

/**
 * `TENANT/SUBJECT` as a person types it, or null when it is not one: split at the first slash
 * (the subject may hold more slashes), both parts passing {@link principalProblem}. The caller
 * says what it expected.
 */
export function parsePrincipal(text: string): Principal | null {
  const principal = principalOf(text);
  return principalProblem(principal) === null ? principal : null;
}
