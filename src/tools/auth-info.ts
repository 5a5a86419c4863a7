import type { Principal } from './principal.js';

/** What either SDK generation tells a server of a request's credentials (its `AuthInfo`, structurally). */
export interface SdkAuthInfo {
  clientId?: string;
  extra?: Record<string, unknown>;
}

/**
 * The default caller of an SDK request: `authInfo.extra.principal` when it is a `{ tenant,
 * subject }` (what tasklatch's own HTTP endpoint sets), else the token's `clientId` as tenant and
 * subject alike; null: the request is anonymous. Both SDK adapters use it.
 */
export function principalFromAuthInfo(authInfo: SdkAuthInfo | undefined): Principal | null {
  const principal = authInfo?.extra?.principal as Partial<Principal> | undefined;
  if (typeof principal?.tenant === 'string' && typeof principal.subject === 'string') return { tenant: principal.tenant, subject: principal.subject };
  if (typeof authInfo?.clientId === 'string' && authInfo.clientId !== '') return { tenant: authInfo.clientId.replace(/\//g, '_'), subject: authInfo.clientId };
  return null;
}
