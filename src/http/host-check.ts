import type { IncomingHttpHeaders } from 'node:http';

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

/** The names to accept by default: the loopback names for a loopback listener, else no check. */
export function loopbackHosts(listenHost: string): readonly string[] | null {
  const bare = listenHost.replace(/^\[(.*)\]$/, '$1');
  return bare === 'localhost' || bare === '::1' || /^127\./.test(bare) ? LOOPBACK : null;
}

/** The host name of a `Host` value or an origin's authority, without the port, lowercased. */
function hostName(authority: string): string {
  const text = authority.trim().toLowerCase();
  if (text.startsWith('[')) return text.slice(0, text.indexOf(']') + 1);
  const colon = text.indexOf(':');
  return colon < 0 ? text : text.slice(0, colon);
}

/** The normalised names of each allow-list, built once per list rather than once per request. */
const nameSets = new WeakMap<readonly string[], Set<string>>();

/**
 * DNS rebinding: a page on another site that resolves its own name to 127.0.0.1 reaches a
 * local server with a foreign `Host` (and its own `Origin`). Both must name an allowed host;
 * a request without an `Origin` (not from a browser) is judged by its `Host` alone.
 */
export function checkHostAndOrigin(headers: IncomingHttpHeaders, allowed: readonly string[]): boolean {
  const names = nameSets.get(allowed) ?? nameSets.set(allowed, new Set(allowed.map((name) => hostName(name)))).get(allowed)!;
  const host = headers.host;
  if (host === undefined || !names.has(hostName(host))) return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  try {
    return names.has(hostName(new URL(origin).host));
  } catch {
    return false;
  }
}
