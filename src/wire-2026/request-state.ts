import { createHmac, timingSafeEqual } from 'node:crypto';
import { jcsSha256 } from '../core/digest.js';
import { invalidParams } from './protocol.js';

/**
 * The state a multi-round-trip call carries between its rounds (MRTR `requestState`): the
 * answers given so far, bound to the caller, the tool and its arguments and the time it was
 * issued, and signed with the store's shared secret, so that any instance can continue the call
 * and no client can forge or alter what the server asked or was answered, nor replay it past
 * its age bound. Opaque to the client: base64url JSON, a dot, an HMAC-SHA256 in base64url.
 */
export interface RoundState {
  answers: Record<string, unknown>;
}

/** The call a state belongs to, and when it is checked (epoch ms). */
export interface RoundBinding {
  auth: string;
  tool: string;
  args: unknown;
}

interface Signed extends RoundState {
  v: 2;
  auth: string;
  tool: string;
  args: string;
  /** Issue time (epoch ms). */
  iat: number;
}

/** An HMAC-SHA256 is 32 bytes: 43 base64url characters, no padding. */
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;

function mac(secret: Uint8Array, body: string): Buffer {
  return createHmac('sha256', secret).update('tasklatch/request-state\n').update(body).digest();
}

export function signRoundState(secret: Uint8Array, bound: RoundBinding, state: RoundState, now: number): string {
  const signed: Signed = { v: 2, auth: bound.auth, tool: bound.tool, args: jcsSha256(bound.args ?? {}), iat: now, answers: state.answers };
  const body = Buffer.from(JSON.stringify(signed), 'utf8').toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

/**
 * The state a client sent back; anything edited, foreign, for another call, older than
 * `maxAgeMs` or with its signature spelled other than the one canonical way is invalid params.
 */
export function verifyRoundState(secret: Uint8Array, bound: RoundBinding, token: unknown, check: { now: number; maxAgeMs: number }): RoundState {
  const refused = () => invalidParams('Invalid requestState: it was not issued for this call, or it was altered');
  if (typeof token !== 'string' || token.length > 1_000_000) throw refused();
  const dot = token.indexOf('.');
  if (dot <= 0) throw refused();
  const body = token.slice(0, dot);
  const spelled = token.slice(dot + 1);
  // base64url decoding forgives other alphabets, padding and trailing bits: only the exact
  // encoding of the 32 bytes is taken, so that one state has one spelling.
  if (!SIGNATURE.test(spelled)) throw refused();
  const given = Buffer.from(spelled, 'base64url');
  if (given.length !== 32 || given.toString('base64url') !== spelled) throw refused();
  if (!timingSafeEqual(given, mac(secret, body))) throw refused();
  let state: Signed;
  try {
    state = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Signed;
  } catch {
    throw refused();
  }
  if (state.v !== 2 || state.auth !== bound.auth || state.tool !== bound.tool || state.args !== jcsSha256(bound.args ?? {})) throw refused();
  const age = check.now - state.iat;
  if (typeof state.iat !== 'number' || !Number.isFinite(age) || age > check.maxAgeMs || age < -60_000) {
    throw invalidParams('Invalid requestState: it has expired; call the tool again from the start');
  }
  return { answers: typeof state.answers === 'object' && state.answers !== null ? state.answers : {} };
}
