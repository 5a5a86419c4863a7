import type { TaskStore } from '../../src/store/types.js';

/**
 * The store, with every cross-process change notification it delivers held back by
 * `delayMs()` (drawn per notification, so they also arrive out of order), or dropped when
 * `delayMs()` answers null: the worst a notification path can do, in the test's hands. Nothing
 * else about the store changes.
 */
export function delayedNotifications(store: TaskStore, delayMs: () => number | null): TaskStore {
  const timers = new Set<NodeJS.Timeout>();
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'listen') {
        return async (onChange: (taskId: string | null, version?: number) => void, onError?: (error: Error) => void) => {
          const stop = await target.listen((taskId, version) => {
            const ms = delayMs();
            if (ms === null) return;
            const timer = setTimeout(() => (timers.delete(timer), onChange(taskId, version)), ms);
            timers.add(timer);
          }, onError);
          return async () => {
            for (const timer of timers) clearTimeout(timer);
            timers.clear();
            await stop();
          };
        };
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
