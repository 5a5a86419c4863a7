import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { principalFromAuthInfo } from '../../tools/auth-info.js';
import { acceptedPrincipal, ANONYMOUS, authKeyOf, type Principal } from '../../tools/principal.js';

export { principalFromAuthInfo } from '../../tools/auth-info.js';

/** Resolves the caller of one request from its auth context; null: the request is anonymous. */
export type ResolvePrincipal = (authInfo: AuthInfo | undefined) => Principal | null;

/**
 * The auth context of the request being handled, carried through everything the handler starts
 * (its awaits, timers and the task work it leaves running). The SDK's `TaskStore` methods get
 * only a session id; this is how each of them learns whose task it touches.
 */
export class RequestAuth {
  private readonly current = new AsyncLocalStorage<AuthInfo | null>();

  constructor(private readonly resolve: ResolvePrincipal = principalFromAuthInfo) {}

  /**
   * Wraps a transport before `server.connect(transport)`: every message it delivers is handled
   * inside the auth context it arrived with. Returns the same transport.
   */
  bind<T extends Transport>(transport: T): T {
    const run = this.current;
    const wrap = (handler: Transport['onmessage']): Transport['onmessage'] =>
      handler === undefined ? undefined : (message, extra) => run.run(extra?.authInfo ?? null, () => handler(message, extra));
    // A transport may keep `onmessage` behind an accessor (the SDK's Node Streamable HTTP
    // transport hands it to an inner one): the wrapped handler goes through that accessor.
    const accessor = findAccessor(transport, 'onmessage');
    let plain = wrap(transport.onmessage);
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      enumerable: true,
      get: () => (accessor?.get === undefined ? plain : (accessor.get.call(transport) as Transport['onmessage'])),
      set: (handler: Transport['onmessage']) => {
        if (accessor?.set === undefined) plain = wrap(handler);
        else accessor.set.call(transport, wrap(handler));
      },
    });
    return transport;
  }

  /** Runs `fn` as the caller of `authInfo` (a request handled outside a bound transport). */
  runAs<T>(authInfo: AuthInfo | null, fn: () => T): T {
    return this.current.run(authInfo, fn);
  }

  /**
   * The principal of the request in progress; null when anonymous or outside any request. One
   * that fails the core's check is thrown as the invalid-request refusal naming its part.
   */
  principal(): Principal | null {
    const authInfo = this.current.getStore();
    return authInfo === undefined || authInfo === null ? null : acceptedPrincipal(this.resolve(authInfo));
  }

  /** The auth key every query of this request is bound to. */
  authKey(): string {
    return authKeyOf(this.principal() ?? ANONYMOUS);
  }
}

/** The accessor that defines `key` on `object` or its prototypes, if it is one. */
function findAccessor(object: object, key: string): PropertyDescriptor | undefined {
  for (let at: object | null = object; at !== null; at = Object.getPrototypeOf(at) as object | null) {
    const descriptor = Object.getOwnPropertyDescriptor(at, key);
    if (descriptor !== undefined) return descriptor.get !== undefined || descriptor.set !== undefined ? descriptor : undefined;
  }
  return undefined;
}
