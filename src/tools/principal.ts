import type { Principal } from '../core/principal.js';

// The principal and its auth key are the core's (`src/core/principal.ts`); the wire adapters and
// tool hosts import them from here beside the default caller.
export { authKeyOf, principalOf, type Principal } from '../core/principal.js';

/** The principal of callers without an auth context. */
export const ANONYMOUS: Principal = { tenant: 'anonymous', subject: 'anonymous' };
