import { performance } from 'node:perf_hooks';
import type { TaskStore } from '../store/types.js';
import type { TaskEvents } from './task-events.js';

/** Not round trips to time: a long-lived subscription, the shutdown, plain properties. */
const UNTIMED = new Set<PropertyKey>(['listen', 'close', 'constructor']);

/**
 * The store with each operation's round trip reported to `events` (`storeCall`), as long as an
 * observer wants it; otherwise the call goes straight through. The store itself is unchanged
 * and every property still reads and writes through to it.
 */
export function timedStore(store: TaskStore, events: TaskEvents): TaskStore {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let fn = wrapped.get(prop);
      if (fn === undefined) {
        const method = value as (...args: unknown[]) => unknown;
        const name = String(prop);
        fn = UNTIMED.has(prop)
          ? method.bind(target)
          : (...args: unknown[]): unknown => {
              if (!events.wants('storeCall')) return method.apply(target, args);
              const started = performance.now();
              const result = method.apply(target, args);
              if (result instanceof Promise) {
                result.then(
                  () => events.emit('storeCall', name, performance.now() - started, false),
                  () => events.emit('storeCall', name, performance.now() - started, true),
                );
              }
              return result;
            };
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}
