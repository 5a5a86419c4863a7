import { createHmac, timingSafeEqual } from 'node:crypto';
import { jcsSha256 } from '../core/digest.js';
import { invalidParams } from './protocol.js';

/**
 * The state a multi-round-trip call carries between its rounds (MRTR `requestState`): the
 * answers given so far, bound to the caller, the tool and its arguments, and signed with the
 * store's shared secret, so that any instance can continue the call and no client can forge or
 * alter what the server asked or was answered. Opaque to the client: base64url JSON, a dot,
 * an HMAC-SHA256.
 */
export interface RoundState {
  answers: Record<string, unknown>;
}

interface Signed extends RoundState {
  v: 1;
  auth: string;
  tool: string;
  args: string;
}

function mac(secret: Uint8Array, body: string): Buffer {
  return createHmac('sha256', secret).update('tasklatch/request-state\n').update(body).digest();
}

export function signRoundState(secret: Uint8Array, bound: { auth: string; tool: string; args: unknown }, state: RoundState): string {
  const signed: Signed = { v: 1, auth: bound.auth, tool: bound.tool, args: jcsSha256(bound.args ?? {}), answers: state.answers };
  const body = Buffer.from(JSON.stringify(signed), 'utf8').toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

/** The state a client sent back; anything edited, foreign or for another call is -32602. */
export function verifyRoundState(secret: Uint8Array, bound: { auth: string; tool: string; args: unknown }, token: unknown): RoundState {
  const refused = () => invalidParams('Invalid requestState: it was not issued for this call, or it was altered');
  if (typeof token !== 'string' || token.length > 1_000_000) throw refused();
  const dot = token.indexOf('.');
  if (dot <= 0) throw refused();
  const body = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = mac(secret, body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refused();
  let state: Signed;
  try {
    state = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Signed;
  } catch {
    throw refused();
  }
  if (state.v !== 1 || state.auth !== bound.auth || state.tool !== bound.tool || state.args !== jcsSha256(bound.args ?? {})) throw refused();
  return { answers: typeof state.answers === 'object' && state.answers !== null ? state.answers : {} };
}
