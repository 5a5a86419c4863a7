/** Who is calling: a tenant and a subject. Their join (`tenant/subject`) is the auth key. */
export interface Principal {
  tenant: string;
  subject: string;
}

/** The principal of callers without an auth context. */
export const ANONYMOUS: Principal = { tenant: 'anonymous', subject: 'anonymous' };

export function authKeyOf(principal: Principal): string {
  return `${principal.tenant}/${principal.subject}`;
}

/** `tenant/subject` back to a principal (the tenant never contains a slash). */
export function principalOf(authKey: string): Principal {
  const slash = authKey.indexOf('/');
  return slash < 0 ? { tenant: authKey, subject: '' } : { tenant: authKey.slice(0, slash), subject: authKey.slice(slash + 1) };
}
