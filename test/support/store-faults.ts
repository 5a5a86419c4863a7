import { EventEmitter, once } from 'node:events';
import { TasklatchError } from '../../src/core/errors.js';
import type { TaskStore } from '../../src/store/types.js';

/** A method of the store, by name. */
export type StoreMethod = Extract<keyof TaskStore, string>;

/**
 * The text of the injected fault: what the PostgreSQL store raises when its connection drops,
 * naming an address no test uses, so that a test can look for it where it must never be (a
 * task's stored outcome, an answer).
 */
export const FAULT_TEXT = 'cannot connect to PostgreSQL at 10.255.0.9:6543: Connection terminated unexpectedly';

/**
 * Store faults at chosen calls of a real store: `wrap` gives the store with every method passed
 * through, except that a method armed with `arm` throws `STORE_UNAVAILABLE` (before the call
 * reaches the store) on its next `times` calls. `hit` resolves once a method has been failed so
 * many times: tests wait on it, never on a timer.
 */
export class StoreFaults {
  private readonly armed = new Map<string, number>();
  private readonly failed = new Map<string, number>();
  private readonly events = new EventEmitter();

  /** Fails the next `times` calls of `method` (all of them until `heal` when not given). */
  arm(method: StoreMethod, times = Infinity): void {
    this.armed.set(method, times);
  }

  /** Lets every call (or every call of `method`) through again. */
  heal(method?: StoreMethod): void {
    if (method === undefined) this.armed.clear();
    else this.armed.delete(method);
  }

  /** How many calls of `method` were failed so far. */
  count(method: StoreMethod): number {
    return this.failed.get(method) ?? 0;
  }

  /** Resolves once `method` has been failed `times` times in all. */
  async hit(method: StoreMethod, times = 1): Promise<void> {
    while (this.count(method) < times) await once(this.events, method);
  }

  wrap(store: TaskStore): TaskStore {
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        return (...args: unknown[]) => {
          const left = this.armed.get(prop) ?? 0;
          if (left > 0) {
            this.armed.set(prop, left - 1);
            this.failed.set(prop, (this.failed.get(prop) ?? 0) + 1);
            this.events.emit(prop);
            const fault = new TasklatchError('STORE_UNAVAILABLE', FAULT_TEXT);
            // The store's promise-returning methods reject; its one synchronous method throws.
            if (prop === 'publishProgress') throw fault;
            return Promise.reject(fault);
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }
}
