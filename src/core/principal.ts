/**
 * Who is calling: a tenant and a subject. Their join, `tenant/subject`, is the auth key every
 * task is stored under; a tenant never holds a slash, so the first slash splits a key back.
 */
export interface Principal {
  tenant: string;
  subject: string;
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
 * `TENANT/SUBJECT` as a person types it, or null when it is not one: both parts non-empty, split
 * at the first slash (the subject may hold more slashes). The caller says what it expected.
 */
export function parsePrincipal(text: string): Principal | null {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) return null;
  return principalOf(text);
}
