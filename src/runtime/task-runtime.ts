import { checkAppName, DEFAULT_APP } from '../core/app-name.js';
import { isStoreFault } from '../core/errors.js';
import { isTerminal, type Millis, type TaskCapabilities } from '../core/types.js';
import { ExpirySweeper } from '../service/expiry-sweeper.js';
import { openGuard, type Guard } from '../service/guard.js';
import type { TaskLimits } from '../service/limits.js';
import type { TaskStore } from '../store/types.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import type { TaskTool } from '../tools/tool.js';
import type { ExecutionHooks } from '../worker/task-executor.js';
import { Worker, type WorkerOptions } from '../worker/worker.js';
import { decisionLog } from './decision-log.js';
import { createLogger, type Logger } from './log.js';
import { ProgressGate } from './progress-gate.js';
import type { RequestHost } from './requests/host.js';
import { sendEvent, senderOf, type SendEventRequest, type SendEventResult } from './requests/send-event.js';
import { taskTools } from './task-tools.js';

/** Progress a task reports while it runs, for whichever wire session asked for it. */
export type ProgressListener = (taskId: string, progress: number, total?: number, message?: string) => void | Promise<void>;

export interface RuntimeOptions {
  store: TaskStore;
  tools: readonly TaskTool[] | ToolRegistry;
  /**
   * The application these tools belong to (default `'default'`): stored with every task admitted
   * here, and the worker claims only tasks of this app. Name it when applications with tools of
   * the same name share a store. 1–100 printable characters, no leading or trailing space.
   */
  app?: string;
  /**
   * Whether the wires in front of this runtime identify their callers (an auth context). Only
   * then may tasks be listed: without it every caller would see every task.
   */
  callersIdentified?: boolean;
  limits?: Partial<TaskLimits>;
  /**
   * Tasks for clients that have none (default false): a plain call of a `required` tool from a
   * client that declared no task support is admitted as a task and answered at once with a text
   * naming the task id, and the tools `task_status`, `task_result` and `task_cancel` are served
   * (listed only then) to follow it under the same guard and tenancy.
   */
  taskTools?: boolean;
  /**
   * Run admitted tasks in this process with a worker (default true). False: only admit and
   * answer; other processes' workers run the tasks.
   */
  execute?: boolean;
  /** Options of the worker (its app is the runtime's). */
  worker?: Omit<WorkerOptions, 'hooks' | 'app'> & Pick<ExecutionHooks, 'beforeTerminalWrite'>;
  /** How long `close()` lets running tasks finish before giving their leases back (ms, default 10000). */
  drainMs?: number;
  /** How often tasks past their retention are removed (ms; default 60000; 0 turns the sweep off). */
  sweepIntervalMs?: number;
  /**
   * How long a finished or expired task and its audit trail are kept before the sweep removes
   * them (ms; default 7 days; see `SweeperOptions.retentionMs`).
   */
  retentionMs?: number;
  /** How often tasks whose question is past its deadline are ended (ms; default 1000; 0 turns it off). */
  inputDeadlineIntervalMs?: number;
  clock?: () => Millis;
  logger?: Logger;
}

/**
 * The one composition of tasklatch: the guard in front of the store (with its change feed), the
 * expiry sweeper and, unless turned off, a worker. The guard's parts go to their callers: the
 * requestor's and the answers' to the request layer (`requests/`, which the wires call), the worker's to
 * the `Worker` as its `WorkerPort`, the answers' and the store to the sweeper, the relay to
 * `start`/`close` and the worker's progress. `tasklatch serve`, `tasklatch
 * worker`, the library and every wire adapter use it; a wire holds sessions and maps decisions
 * to messages, and never builds any of these itself.
 */
export class TaskRuntime implements RequestHost {
  /** The guard in front of the store, by caller (see `Guard`). */
  readonly guard: Guard;
  readonly tools: ToolRegistry;
  /** The in-process worker, or null when other processes run the tasks. */
  readonly worker: Worker | null;
  readonly logger: Logger;
  /** The receiver's task capabilities, in the 2025-11-25 server shape the rules read. */
  readonly capabilities: TaskCapabilities;
  /** Whether plain clients get tasks through the task tools (`RuntimeOptions.taskTools`). */
  readonly taskTools: boolean;
  /** The application of this runtime's tasks and worker (`RuntimeOptions.app`). */
  readonly app: string;
  private readonly sweeper: ExpirySweeper | null;
  private readonly progressListeners = new Set<ProgressListener>();
  private readonly stopRemoteProgress: () => void;
  /** What each task's listeners were given last: progress that does not increase is held back. */
  private readonly progressGate = new ProgressGate();
  private readonly stopForgettingProgress: () => void;
  private readonly drainMs: number;

  constructor(options: RuntimeOptions) {
    this.app = checkAppName(options.app ?? DEFAULT_APP);
    const given = options.tools instanceof ToolRegistry ? options.tools : new ToolRegistry(options.tools);
    this.taskTools = options.taskTools === true;
    // A tool of the user's named like a task tool is refused by the registry, as any duplicate.
    this.tools = this.taskTools ? new ToolRegistry([...given.names().map((name) => given.get(name)!), ...taskTools(this)]) : given;
    this.logger = options.logger ?? createLogger();
    this.drainMs = options.drainMs ?? 10_000;
    options.store.onProblem ??= (message, fields) => this.logger.warn(fields, message);
    this.capabilities = Object.assign(
      {},
      options.callersIdentified === true ? { list: {} } : {},
      { cancel: {} },
      this.tools.anyTaskSupport ? { requests: { tools: { call: {} } } } : {},
    );
    this.guard = openGuard({
      store: options.store,
      capabilities: this.capabilities,
      app: this.app,
      toolDigest: (name) => this.tools.digest(name),
      toolVersion: (name) => this.tools.version(name),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    });
    const { context } = this.guard;
    context.events.add(decisionLog(this.logger));
    // Progress of tasks other processes run, for the sessions here that asked for it.
    this.stopRemoteProgress = context.changes.subscribeProgress((event) => {
      void this.emitProgress(event.taskId, event.progress, event.total, event.message);
    });
    // A task that ended reports nothing more: its highest progress is forgotten (a change that
    // carries no record leaves it to the gate's bound).
    this.stopForgettingProgress = context.changes.subscribeAll((taskId, _version, record) => {
      if (taskId !== undefined && record !== undefined && isTerminal(record.status)) this.progressGate.forget(taskId);
    });
    const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
    const inputDeadlineIntervalMs = options.inputDeadlineIntervalMs ?? 1000;
    // Through the guard, not the bare store: a task a deadline ends is published to this
    // process's waiters, and each round trip is timed.
    this.sweeper =
      sweepIntervalMs > 0 || inputDeadlineIntervalMs > 0
        ? new ExpirySweeper(this.guard, context.clock, {
            intervalMs: sweepIntervalMs,
            inputDeadlineIntervalMs,
            ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
            // An outage is one line without a stack (it is not a fault of the process); anything else keeps its stack.
            onError: (error) =>
              this.logger.warn(
                isStoreFault(error) ? { reason: (error as Error).message } : { err: error },
                'upkeep pass failed (expiry sweep or input deadlines)',
              ),
          })
        : null;
    const { beforeTerminalWrite, ...workerOptions } = options.worker ?? {};
    this.worker =
      options.execute === false
        ? null
        : new Worker(
            this.guard.worker,
            this.tools,
            Object.assign({}, workerOptions, {
              hooks: {
                // The worker's events (`RunEventMap`), each with its name, worker id and, for a run's, task id and attempt.
                log: (level, message, fields) => this.logger[level](fields, message),
                progress: (record, progress, total, message) => {
                  // Other processes' requestors hear it through the store; this one's at once.
                  this.guard.relay.publishProgress(record, progress, total, message);
                  return this.emitProgress(record.taskId, progress, total, message);
                },
                ...(beforeTerminalWrite === undefined ? {} : { beforeTerminalWrite }),
              },
            } satisfies WorkerOptions),
          );
  }

  /** Starts relaying other processes' changes (stores that notify), the sweeper and the worker. */
  async start(): Promise<void> {
    // The listener's connection dropped or could not be opened: one line without a stack, each time.
    await this.guard.relay.start((error) => this.logger.warn({ reason: error.message }, 'change notifications interrupted; reconnecting'));
    this.sweeper?.start();
    this.worker?.start();
  }

  /** The limits every request is held to (the guard's); a wire's own framing reads a few of them. */
  get limits(): TaskLimits {
    return this.guard.context.limits;
  }

  /** The guard's clock. */
  now(): Millis {
    return this.guard.context.clock();
  }

  /** The secret every process on the store shares (a 2026-07-28 call's signed round state). */
  sharedSecret(): Promise<Uint8Array> {
    const { context } = this.guard;
    return context.timed('sharedSecret', context.started(), context.store.sharedSecret());
  }

  /** Stops the handler of `taskId` if this process's worker runs it (a cancelled task's). */
  stopRun(taskId: string): void {
    this.worker?.executor.abort(taskId, 'cancelled');
  }

  /**
   * Hears the progress of every task this process runs and, where the store carries progress
   * between processes (`TaskUpkeep.publishProgress`), of the tasks other processes run (best
   * effort); returns the function that stops it. Progress only increases: a report of a task
   * that is not above the highest one its listeners were given (a run that replays code outside
   * its steps reports again what it reported before) is not passed on.
   */
  onProgress(listener: ProgressListener): () => void {
    this.progressListeners.add(listener);
    return () => {
      this.progressListeners.delete(listener);
      if (this.progressListeners.size === 0) this.progressGate.clear();
    };
  }

  /**
   * Sends an event into a task of the sender (`principal`, or its `authKey`): a wait of its type
   * (`ctx.step.waitForEvent`) returns the payload; a task not waiting yet keeps it (bounded,
   * `limits.maxPendingEvents`) for the wait that comes. Refused, with a reason, for an unknown or
   * another tenant's task (alike), an expired or finished one, a payload over `limits.maxEventBytes`,
   * or too many pending. A webhook handler of the application's own calls this.
   */
  sendEvent(request: SendEventRequest): Promise<SendEventResult> {
    const sender = senderOf(request);
    if (sender === undefined) return Promise.resolve({ kind: 'refused', reason: 'invalid', message: 'sendEvent needs its sender: principal or authKey' });
    return sendEvent(this, sender, request);
  }

  /** Stops: no new claims, running tasks drain (then their leases go back), notifications stop. */
  async close(drainMs = this.drainMs): Promise<void> {
    await this.sweeper?.stop();
    await this.worker?.stop(drainMs);
    await this.guard.relay.stop();
    this.stopRemoteProgress();
    this.stopForgettingProgress();
  }

  private async emitProgress(taskId: string, progress: number, total?: number, message?: string): Promise<void> {
    // Nobody listens, nothing is remembered; the check is synchronous, so reports pass it in the order they came.
    if (this.progressListeners.size === 0 || !this.progressGate.admit(taskId, progress)) return;
    for (const listener of this.progressListeners) {
      try {
        await listener(taskId, progress, total, message);
      } catch (error) {
        this.logger.warn({ err: error, taskId }, 'progress not delivered');
      }
    }
  }
}

/** Builds a runtime; see `RuntimeOptions`. */
export function createRuntime(options: RuntimeOptions): TaskRuntime {
  return new TaskRuntime(options);
}
