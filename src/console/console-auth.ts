import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { headerBearsToken, sameText } from '../core/bearer.js';

/** The console's session cookie: set only after the operator's token was presented. */
export const SESSION_COOKIE = 'tasklatch_console';

/**
 * Who may use the console. With a token (the one `/metrics` asks for), a request bears it
 * (`Authorization: Bearer …`, for scripts) or carries a session cookie the login form set after
 * it was typed: `SESSION.MAC`, the MAC keyed by the token, so no cookie is valid without it and a
 * new token ends every session. Without a token the console is open (the listener is the
 * operator's own) and sets no cookie. Each session has its CSRF token for the cancel form.
 */
export class ConsoleAuth {
  /** Keys the CSRF tokens of a console without a token (one per process). */
  private readonly openSecret = randomBytes(32);

  constructor(private readonly token: string | undefined) {}

  get required(): boolean {
    return this.token !== undefined;
  }

  /** Whether `typed` is the token, compared in constant time. */
  tokenMatches(typed: string): boolean {
    if (this.token === undefined) return false;
    return sameText(typed, this.token);
  }

  /** A new session's cookie value; only after `tokenMatches`. */
  newSession(): string {
    const session = randomBytes(18).toString('base64url');
    return `${session}.${this.mac(`session:${session}`)}`;
  }

  /** The request's session id (`'open'` when no token is set), or null when it may not enter. */
  sessionOf(req: IncomingMessage): string | null {
    if (this.token === undefined) return 'open';
    if (headerBearsToken(req.headers.authorization, this.token)) return 'bearer';
    const value = cookieValue(req.headers.cookie, SESSION_COOKIE);
    const dot = value === null ? -1 : value.indexOf('.');
    if (value === null || dot < 1) return null;
    const session = value.slice(0, dot);
    return sameText(value.slice(dot + 1), this.mac(`session:${session}`)) ? session : null;
  }

  /** The CSRF token of a session, for its forms. */
  csrfFor(session: string): string {
    return this.mac(`csrf:${session}`);
  }

  csrfMatches(session: string, given: string): boolean {
    return sameText(given, this.csrfFor(session));
  }

  private mac(text: string): string {
    return createHmac('sha256', this.token ?? this.openSecret)
      .update(text)
      .digest('base64url');
  }
}

/** The `Set-Cookie` of a session: never readable by a script, never sent from another site. */
export function sessionCookie(value: string): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/console`;
}

function cookieValue(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
