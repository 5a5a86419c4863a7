import type { Guard } from '../../service/guard.js';
import type { ToolRegistry } from '../../tools/tool-registry.js';
import type { Logger } from '../log.js';

export { openGuard, type Guard, type GuardOptions } from '../../service/guard.js';
export type { TaskLimits } from '../../service/limits.js';

/**
 * The request layer: the requests of both wires, each decided once, one file per method
 * (`get-task.ts`, `await-result.ts`, `cancel-task.ts`, `answer-task.ts`, `list-tasks.ts`,
 * `list-tools.ts`, `watch-tasks.ts`, `own-task.ts`; `tools/call` is `runtime/call-tool.ts`).
 * Each is a function `(host, request) → outcome`: plain data in, an outcome discriminated by
 * `kind` out. A wire decodes its params into the request, calls the function with the runtime
 * as host, and encodes the outcome as its era's messages, deciding nothing itself.
 *
 * What the request functions need of the runtime (`TaskRuntime` is one): the guard in front of
 * the store, the tools, whether plain clients get tasks through the task tools, a logger, and
 * how to stop a task's handler running in this process. Each request takes only the parts it
 * reads (`Pick<RequestHost, …>`), so an adapter with a guard of its own (the SDK task store)
 * passes just that.
 */
export interface RequestHost {
  readonly guard: Guard;
  readonly tools: ToolRegistry;
  readonly taskTools: boolean;
  readonly logger: Logger;
  /** Stops the handler of `taskId` if it runs in this process (a cancelled task's). */
  stopRun(taskId: string): void;
}
