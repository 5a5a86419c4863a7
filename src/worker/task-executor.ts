import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { coerceError, isStoreFault } from '../core/errors.js';
import type { TaskRecord, WireRequest } from '../core/types.js';
import type { WorkerPort } from '../service/worker-port.js';
import { errorResult, invokeTool } from '../tools/invoke-tool.js';
import { ProtocolError, type StoredError } from '../tools/protocol-error.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { ToolResult } from '../tools/tool.js';
import { endRun, inRun, runSpan } from '../trace/run-spans.js';
import { parkRun, parks, runVersion } from './park-run.js';
import { RunLogger, type RunLogSink } from './run-events.js';
import { TaskRun, type Lease, type StopReason } from './task-run.js';
import { taskToolContext, type ProgressSink } from './tool-context.js';

/** Where an executor reports what it cannot return, and where a test may step in. */
export interface ExecutionHooks {
  progress?: ProgressSink;
  /** Where the worker's events go, one line each (see `RunEventMap`). */
  log?: RunLogSink;
  /** Runs after the handler returned and before its terminal write (fault injection). */
  beforeTerminalWrite?: (record: TaskRecord) => void | Promise<void>;
}

/** How a run ended: the status its terminal write stored, `refused`, `parked` (a journal mismatch), or why it stopped without one. */
export type RunOutcome = StopReason | 'completed' | 'failed' | 'refused' | 'parked' | 'unfinished';

/**
 * Runs claimed tasks: one tool handler per task with an AbortSignal that fires on cancellation
 * (seen through change events and heartbeats, in whichever process it was written), on expiry,
 * on losing the lease and on draining. The fenced writes of each run are its `TaskRun`'s.
 */
export class TaskExecutor {
  private readonly running = new Map<string, { run: TaskRun; done: Promise<RunOutcome> }>();
  /** The runs whose handler has not returned yet, each with when it started: the slots a worker counts (see `busy`). */
  private readonly handling = new Map<string, number>();
  private readonly logger: RunLogger;
  /** Hears each run whose handler returned, and how long it ran: its slot is free while its last write goes out. */
  onHandlerDone: ((handlerMs: number) => void) | null = null;
  /** Hears each task a run suspended until a time (a sleep, a retry's wait): its worker looks at the outbox then. */
  onSleep: ((taskId: string, wakeAt: number) => void) | null = null;

  constructor(
    private readonly port: WorkerPort,
    private readonly tools: ToolRegistry,
    private readonly hooks: ExecutionHooks = {},
    logger?: RunLogger,
  ) {
    this.logger = logger ?? RunLogger.to(hooks.log);
  }

  /** Number of runs now, from the claim to the end of their last write. */
  get active(): number {
    return this.running.size;
  }

  /**
   * Number of handlers running now: a worker's slots. A run whose handler returned holds no
   * slot while its terminal write (or release) is at the store: the write needs no handler, and
   * a slot held through it would sit idle for a round trip per task.
   */
  get busy(): number {
    return this.handling.size;
  }

  /**
   * Runs a claimed task's handler; resolves when its terminal write (or refusal) is done, with
   * how the run ended: the status its terminal write stored, or why it stopped without one.
   */
  execute(record: TaskRecord, lease: Lease): Promise<RunOutcome> {
    const existing = this.running.get(record.taskId);
    // A run that has stopped (it suspended for input, say) is finishing: the new claim starts a
    // new run once it has.
    if (existing !== undefined && existing.run.stopped !== null) return existing.done.then(() => this.execute(record, lease));
    if (existing !== undefined) {
      // This worker claimed its own task again after letting the lease lapse: the claim moved
      // the version, so the running handler carries on under the new one.
      existing.run.version = Math.max(existing.run.version, record.version);
      return existing.done;
    }
    // The lease's owner is the worker: every line of the run says whose it is, of which task and claim.
    const run = new TaskRun(record, lease, this.port, this.logger.run(record, lease.owner), this.tools);
    run.trace = runSpan(record, lease.owner);
    const started = performance.now();
    const outcome = (): RunOutcome => run.stopped ?? run.ended ?? 'unfinished';
    this.handling.set(record.taskId, started);
    // In the run's context: its store round trips (heartbeats, the terminal write) are its span's children.
    const done = inRun(run.trace, this.supervise.bind(this), run)
      .finally(() => {
        this.handlerDone(record.taskId);
        this.running.delete(record.taskId);
        endRun(run.trace, outcome());
        this.port.events.emit('runEnded', { taskId: record.taskId, tool: record.toolName, outcome: outcome(), durationMs: performance.now() - started });
      })
      .then(outcome);
    this.running.set(record.taskId, { run, done });
    return done;
  }

  /** Whether a handler of `taskId` runs here now. */
  runs(taskId: string): boolean {
    return this.running.has(taskId);
  }

  /**
   * Passes a change of `taskId` (at `version`, or unknown) to its run, as its own subscription
   * would have: for a change that came before the run watched the task.
   */
  observe(taskId: string, version: number | undefined): void {
    this.running.get(taskId)?.run.observe(version);
  }

  /** Aborts a running handler whose task this process saw cancelled. */
  abort(taskId: string, reason: StopReason = 'cancelled'): void {
    this.running.get(taskId)?.run.stop(reason);
  }

  /**
   * Lets running handlers finish for up to `timeoutMs`, then aborts the rest and gives their
   * leases back, so another worker picks them up at once instead of after the lease runs out.
   */
  async drain(timeoutMs: number): Promise<void> {
    const all = Promise.allSettled([...this.running.values()].map((r) => r.done));
    // Cleared when the runs end first: a pending timer would keep a closed process alive for timeoutMs.
    const cancel = new AbortController();
    const timer = sleep(timeoutMs, 'timeout' as const, { signal: cancel.signal }).catch(() => 'cleared' as const);
    const first = await Promise.race([all, timer]);
    cancel.abort();
    if (first === 'timeout') {
      for (const taskId of this.running.keys()) this.abort(taskId, 'drained');
      await all;
    }
  }

  /** Heartbeats, change events and the ttl watch the handler; then the one terminal write. */
  private async supervise(run: TaskRun): Promise<void> {
    const { record, logger } = run;
    const heartbeat = setInterval(() => run.beat(), run.lease.heartbeatMs);
    const unwatch = this.port.changes.subscribe(record.taskId, (version, carried) => run.observe(version, carried));
    const untilExpiry = record.expiresAt === null ? null : Math.max(0, record.expiresAt - this.port.now());
    const expiry = untilExpiry === null ? null : setTimeout(() => run.stop('expired'), untilExpiry);
    let result: ToolResult | StoredError;
    try {
      result = await this.invoke(run);
    } catch (error) {
      // Only a ProtocolError leaves invokeTool: the tool ends its task with a JSON-RPC error.
      if (!(error instanceof ProtocolError)) throw error;
      result = { error: error.toJSON() };
    } finally {
      clearInterval(heartbeat);
      unwatch();
      if (expiry !== null) clearTimeout(expiry);
      this.handlerDone(record.taskId);
    }
    if (run.stopped === 'suspended' && run.wakeAt !== null) {
      // The suspend write cleared the lease and made the task due at its wake time: a release
      // now would make it due at once.
      logger.emit('run:sleeps', { until: new Date(run.wakeAt).toISOString() });
      this.onSleep?.(record.taskId, run.wakeAt);
      return;
    }
    if (run.stopped === 'drained' || run.stopped === 'suspended' || run.stopped === 'store unavailable') {
      // Another worker (or this one) claims the task when it is due again: at once after a
      // drain, once its answers are in after a suspension, once the store is back after a store
      // fault (a release the store cannot take leaves the lease to expire).
      await run.release();
      if (run.stopped === 'suspended') logger.emit('run:waitsForInput', {});
      if (run.stopped === 'store unavailable') logger.emit('run:storeUnavailable', {});
      return;
    }
    // Stopped as `cancelled`, the run saw its task terminal (cancelled, or ended by another
    // writer: final) or gone: a terminal or park write could only be refused. Sent, it cost a
    // write and the read classifying its refusal, in the very moment the task's waiters are answered.
    if (run.stopped === 'lease lost' || run.stopped === 'expired' || run.stopped === 'cancelled') {
      logger.emit('run:stopped', { reason: run.stopped });
      return;
    }
    // A run whose handler disagrees with its journal parks its task (no terminal write: a deploy
    // that agrees finishes it); one that broke it otherwise, or whose tool asked to fail, ends it
    // failed, whatever the handler made of the error.
    if (parks(run, this.tools)) {
      const wakeAt = await parkRun(run, this.port, runVersion(run, this.tools));
      run.ended = wakeAt === null ? 'refused' : 'parked';
      if (wakeAt !== null) this.onSleep?.(record.taskId, wakeAt);
      return;
    }
    if (run.fatal !== null) result = { error: run.fatal.toJSON() };
    await this.hooks.beforeTerminalWrite?.(record);
    await run.writeTerminal(result);
  }

  private handlerDone(taskId: string): void {
    const startedAt = this.handling.get(taskId);
    if (startedAt === undefined) return;
    this.handling.delete(taskId);
    this.onHandlerDone?.(performance.now() - startedAt);
  }

  private async invoke(run: TaskRun): Promise<ToolResult> {
    const { record } = run;
    const request = record.request as WireRequest | null;
    const tool = record.toolName === null ? undefined : this.tools.get(record.toolName);
    if (tool === undefined || request === null) return errorResult(`tool ${record.toolName ?? '(none)'} is not served here`);
    return inRun(run.trace, invokeTool, tool, request.params.arguments, taskToolContext(run, this.hooks.progress), (error: unknown) => {
      // A store fault the handler let through, or wrapped as the cause of its own error: the run
      // stops without a terminal write, and the task runs again (see `TaskRun.storeFailed`).
      if (isStoreFault(error)) return run.stop('store unavailable');
      run.logger.emit('run:handlerThrew', { err: coerceError(error) });
    });
  }
}
