import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { principalProblem, type Principal } from '../core/principal.js';
import { ProtocolError } from './protocol-error.js';

// The principal and its auth key are the core's (`src/core/principal.ts`); the wire adapters and
// tool hosts import them from here beside the default caller.
export { authKeyOf, principalOf, type Principal } from '../core/principal.js';

/** The principal of callers without an auth context. */
export const ANONYMOUS: Principal = { tenant: 'anonymous', subject: 'anonymous' };

/**
 * A caller's principal as a wire got it from code of its user (an `authenticate`, a `principal`
 * resolver, an SDK's `authInfo`), or the invalid-request refusal naming the part that fails the core's
 * check: a malformed identity is answered before any store sees it. Null (anonymous) passes.
 */
export function acceptedPrincipal<P extends Principal | null>(principal: P): P {
  if (principal === null) return principal;
  const problem = principalProblem(principal);
  if (problem === null) return principal;
  throw new ProtocolError(JSON_RPC_CODES.invalidRequest, `Unauthorized: the caller's ${problem.part} ${problem.problem}`);
}
