import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { checkAppName } from '../core/app-name.js';
import { slotOf } from '../core/concurrency-rules.js';
import { taskSupportOf } from '../core/create-rules.js';
import { coerceError } from '../core/errors.js';
import { isTerminal, type TaskRecord } from '../core/types.js';
import type { ClaimReservation } from '../service/admission-claims.js';
import type { WorkerPort } from '../service/worker-port.js';
import { errorResult } from '../tools/invoke-tool.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { AdmittedWaits, giveBack } from './admitted-waits.js';
import { ClaimWindow, OwedLook } from './claim-window.js';
import { VersionAnnouncer, type VersionAnnounceOptions } from './version-announcer.js';
import { RunLogger } from './run-events.js';
import { TaskExecutor, type ExecutionHooks } from './task-executor.js';

export interface WorkerOptions {
  /** Lease owner id; unique per worker (default host:pid:random). */
  id?: string;
  /** Handlers run at once (default 4). */
  concurrency?: number;
  /** Lease length (default 30 s): how long a dead worker's tasks wait before another takes them. */
  leaseMs?: number;
  /** Lease renewal, and the longest a cancellation written elsewhere takes to reach a handler (default min(leaseMs / 3, pollInterval)). */
  heartbeatMs?: number;
  /** Idle wait between claims when no change event wakes the worker (default 5 s; 500 ms on a shared SQLite file). */
  pollMs?: number;
  /** Claims of one task before it is ended `failed` (default 5). */
  maxAttempts?: number;
  /**
   * How long a task its admission leased here may wait for a slot (default 1000; at most
   * leaseMs / 3, so that its lease outlasts the wait; 0: admissions lease only to a free slot).
   */
  admissionWaitMs?: number;
  /**
   * The application whose tasks this worker claims (a checked name; default: the service's app,
   * the one its admissions record). Tool names are unique within an app only.
   */
  app?: string;
  /** How the worker announces its tools' versions and when a silent worker counts as gone (see `VersionAnnouncer`). */
  versions?: VersionAnnounceOptions;
  hooks?: ExecutionHooks;
}

/**
 * Claims admitted tasks from the store's outbox and runs them. Any number of workers, in any
 * number of processes, may share one store: a claim is a conditional write that bumps the
 * task's version, so a worker that lost its lease (paused, partitioned, killed and restarted) is
 * refused on its next write. Woken by change events (this process's admissions, PostgreSQL
 * LISTEN/NOTIFY); polling is only the fallback.
 */
export class Worker {
  readonly id: string;
  readonly executor: TaskExecutor;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly heartbeatMs: number;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  /** The worker's logger: every line carries its id (`workerId`). */
  private readonly logger: RunLogger;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  /**
   * The look the outbox is owed: for the task of every change event (while a claim is in flight
   * too: an event then must not be lost, or a task admitted at that moment would wait for the
   * fallback poll), and for every task after a claim that filled its limit (it may have left due
   * tasks behind), a failed claim and the poll; cleared before each claim. A finished run only
   * wakes the loop: with nothing owed, a free slot is no reason to look, and the worker waits for
   * a change event or the poll.
   */
  private readonly owed = new OwedLook();
  /** Slots the claim in flight may fill: held from admissions until it returns. */
  private claiming = 0;
  /** The changes seen while a claim is in flight (see `ClaimWindow`); null between claims. */
  private seen: ClaimWindow | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Admissions in flight that may lease their task to this worker. */
  private reserved = 0;
  /** Tasks its admissions leased here that wait for a slot (each counts as a slot taken). */
  private readonly waiting: AdmittedWaits;
  private withdraw: (() => void) | null = null;
  private readonly runs = new Set<Promise<void>>();
  /** The tools this worker runs: the claim takes only their tasks and leaves the rest in place. */
  private readonly toolNames: readonly string[];
  /** The app whose tasks it claims; the claim leaves every other app's tasks in place. */
  readonly app: string;
  private readonly tools: ToolRegistry;
  /** Announces the versions of its tools and keeps what its claims may take by version. */
  private readonly announcer: VersionAnnouncer;
  /** Looks owed at the wake time of a task this worker suspended (other processes find it at their poll). */
  private readonly wakeTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly port: WorkerPort,
    tools: ToolRegistry,
    options: WorkerOptions = {},
  ) {
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.concurrency = options.concurrency ?? 4;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.heartbeatMs = options.heartbeatMs ?? Math.max(50, Math.min(Math.floor(this.leaseMs / 3), port.limits.pollInterval));
    const { supports } = port;
    this.pollMs = options.pollMs ?? (supports.shared && !supports.listenNotify ? 500 : 5_000);
    this.maxAttempts = options.maxAttempts ?? 5;
    this.logger = RunLogger.to(options.hooks?.log).scope({ workerId: this.id });
    this.executor = new TaskExecutor(port, tools, options.hooks, this.logger);
    this.executor.onSleep = (_taskId, wakeAt) => this.lookAt(wakeAt);
    const waitMs = Math.max(0, Math.min(options.admissionWaitMs ?? 1000, Math.floor(this.leaseMs / 3)));
    const launch = (record: TaskRecord) => this.launch(record);
    this.waiting = new AdmittedWaits(waitMs, this.executor, this.concurrency, launch, (record) => void this.giveBack(record));
    // A slot is free once its handler returned: a task waiting for one takes it, else a look owed may.
    this.executor.onHandlerDone = (handlerMs) => {
      this.waiting.handlerDone(handlerMs);
      this.wake?.();
    };
    this.toolNames = tools.names();
    this.tools = tools;
    this.app = options.app === undefined ? port.app : checkAppName(options.app, 'worker app');
    // Only tools that may run as tasks have tasks to claim by version.
    const own = new Map(this.toolNames.filter((name) => taskSupportOf(tools.get(name)!) !== 'forbidden').map((name) => [name, tools.version(name)!]));
    // Grants that changed may make tasks claimable that were not: every task is looked at again.
    this.announcer = new VersionAnnouncer(port, this.app, this.id, own, this.logger, () => this.nudge(), options.versions);
  }

  /**
   * The version of `tool` this worker runs (`ToolRegistry.version`): what it announces, what its
   * claims are granted by, and what a task of another version differs from; null for a tool it
   * does not run.
   */
  version(tool: string): string | null {
    return this.tools.version(tool);
  }

  /** Starts claiming. */
  start(): void {
    if (this.loop !== null) return;
    this.stopping = false;
    this.unsubscribe = this.port.changes.subscribeAll((taskId, version, record) => this.changed(taskId, version, record));
    this.withdraw = this.port.admissionClaims.offer(this);
    // Said once: a task of any other tool is never claimed here and waits for a worker that knows it.
    this.logger.emit('worker:started', { app: this.app, tools: this.toolNames, versions: this.announcer.versions() });
    this.loop = this.run(this.announcer.start());
  }

  /**
   * Stops claiming, lets running tasks finish for up to `drainMs`, gives the rest of the leases
   * back, and resolves when nothing of this worker runs any more.
   */
  async stop(drainMs = 10_000): Promise<void> {
    this.stopping = true;
    this.withdraw?.();
    this.withdraw = null;
    this.nudge();
    await this.loop;
    this.loop = null;
    // Tasks that never started go back at once, as a drained run's do.
    await Promise.all(this.waiting.drain().map((record) => this.giveBack(record)));
    // No more claims from here: the worker's versions are gone for the others at once.
    await this.announcer.stop();
    this.unsubscribe?.();
    for (const timer of this.wakeTimers) clearTimeout(timer);
    this.wakeTimers.clear();
    await this.executor.drain(drainMs);
    await Promise.allSettled([...this.runs]);
  }

  private async run(announced: Promise<void>): Promise<void> {
    // The first claim goes with the grants of the first announcement (it never fails: a failed one keeps the worker to its own version).
    await announced;
    let failures = 0;
    // The first look is owed: tasks may be due already.
    this.owed.every();
    // The poll counts from the last look, not from the last wake-up: runs that finish more often
    // than the poll interval must not put off the look that finds expired leases.
    let lastLook = performance.now();
    while (!this.stopping) {
      const free = this.concurrency - this.executor.busy - this.waiting.size - this.reserved;
      if (free > 0 && this.owed.any) {
        // At most one slot per task an event named (the others stay free for admissions), every
        // free slot when every task may be due.
        // Cleared before the look at the outbox: whatever comes after it is news for the next look.
        const look = this.owed.take(free);
        const { limit } = look;
        this.claiming = limit;
        lastLook = performance.now();
        this.seen = new ClaimWindow();
        try {
          const claimed = await this.port.claim({
            owner: this.id,
            leaseMs: this.leaseMs,
            limit,
            maxAttempts: this.maxAttempts,
            abandonedResult: errorResult(`task abandoned after ${this.maxAttempts} attempts`),
            tools: this.toolNames,
            app: this.app,
            versions: this.announcer.grants,
          });
          failures = 0;
          for (const record of claimed) this.launch(record);
          this.replaySeen(claimed);
          // A full look may have left due tasks behind: the next free slot looks at once.
          this.owed.after(look, free, new Set(claimed.map((record) => record.taskId)));
        } catch (error) {
          failures++;
          this.logger.emit('worker:claimFailed', { err: coerceError(error), failures });
          // What changed meanwhile is news for the next look.
          if (this.seen?.any === true) this.nudge();
        } finally {
          this.seen = null;
          this.claiming = 0;
        }
      }
      const interval = failures === 0 ? this.pollMs : Math.min(this.pollMs, 250 * 2 ** Math.min(failures, 4));
      // Owed already, the worker waits only for a free slot; the timer then just bounds the wait.
      const timedOut = await this.idle(this.owed.any ? interval : Math.max(0, lastLook + interval - performance.now()));
      if (timedOut) this.owed.every();
    }
  }

  /** Runs a task this worker holds the lease of. */
  private launch(record: TaskRecord): void {
    this.checkDefinition(record);
    const run = this.executor
      .execute(record, { owner: this.id, leaseMs: this.leaseMs, heartbeatMs: this.heartbeatMs })
      .then(
        (outcome) => outcome === 'completed' || outcome === 'failed' || outcome === 'cancelled' || outcome === 'expired',
        (error: unknown) => {
          this.logger.run(record, this.id).emit('run:error', { err: coerceError(error) });
          return false;
        },
      )
      .then((ended) => {
        this.runs.delete(run);
        // A run that ended its task, or saw it end elsewhere (`cancelled`: cancelled, or finished
        // by another writer) or expire, leaves nothing due behind, and its slot is claimed only if
        // a look is owed (a change came while every slot was busy). Any other run (suspended,
        // drained, refused, or one that threw) may leave its task due again, and the changes
        // its task went through meanwhile were its own (an answer, say): the outbox is looked at.
        // A run of a concurrency key that ended frees a slot a waiting task of its key may take.
        if (ended && slotOf(record.request) === null) this.wake?.();
        else this.nudge();
      });
    this.runs.add(run);
  }

  /**
   * A task of this app whose tool was defined otherwise when it was admitted still runs here:
   * during a rolling deploy old and new definitions meet, and a task left for a worker with the
   * admitted definition could wait forever once none is left. The difference is said, naming
   * both digests, so that a result the requestor then rejects (another output schema) is traced
   * to its cause.
   */
  private checkDefinition(record: TaskRecord): void {
    if (record.toolDigest === null || record.toolName === null) return;
    const own = this.tools.digest(record.toolName);
    if (own === null || own === record.toolDigest) return;
    this.logger
      .run(record, this.id)
      .emit('run:otherDefinition', { app: this.app, tool: record.toolName, admittedDigest: record.toolDigest, workerDigest: own });
  }

  /**
   * A free slot for a task of `tool` admitted in this process, leased to this worker by the
   * admission itself (see `AdmissionClaimers`); null when every slot is taken or held, for a
   * tool this worker does not run, and once it stops.
   */
  reserve(tool: string): ClaimReservation | null {
    // The admission records the service's app: a worker of another app must not take its task.
    if (this.loop === null || this.stopping || this.app !== this.port.app || !this.toolNames.includes(tool)) return null;
    // The slots a look owed will claim are not free: tasks due in the outbox, admitted before
    // this one, take them first, and this task queues behind them. Without this, admissions
    // arriving as fast as slots free would take every slot and leave those tasks waiting until
    // the poll. Nor are the slots of the claim in flight.
    const free = this.concurrency - this.executor.busy - this.waiting.size - this.claiming;
    const open = free - this.owed.limit(free);
    // Up to `concurrency` beyond the open slots (`AdmittedWaits`), none while a look is owed.
    const beyond = this.waiting.holdsBeyond && !this.owed.any ? this.concurrency : 0;
    if (open <= 0 || this.reserved >= open + beyond) return null;
    this.reserved++;
    let held = true;
    const unhold = () => {
      if (!held) return false;
      held = false;
      this.reserved--;
      return true;
    };
    return {
      owner: this.id,
      leaseMs: this.leaseMs,
      maxAttempts: this.maxAttempts,
      run: (record) => {
        if (unhold()) this.waiting.admitted(record);
      },
      // A slot free again: the loop may have waited for it with a look owed.
      release: () => {
        if (unhold()) this.wake?.();
      },
    };
  }

  /** Gives a waiting task's lease back (`giveBack`); this worker may take it again once a slot frees. */
  private async giveBack(record: TaskRecord): Promise<void> {
    await giveBack(this.port, record, this.id, this.logger);
    this.owed.task(record.taskId);
    this.wake?.();
  }

  /**
   * A change event. A change of a task this worker runs is its run's business (the run watches
   * it) and makes nothing else due; while a claim is in flight the change is noted and judged
   * when the claim returns (`replaySeen`: a task it claimed may have been cancelled meanwhile);
   * a change that carried its task's terminal record (another process completed it, say) makes
   * nothing due; any other change sends the worker to the outbox.
   */
  private changed(taskId: string | undefined, version: number | undefined, record: TaskRecord | undefined): void {
    if (taskId !== undefined && this.executor.runs(taskId)) return;
    // A task waiting here for a slot is this worker's too: the change goes to its run.
    if (taskId !== undefined && this.waiting.note(taskId, version)) return;
    if (this.seen !== null) this.seen.note(taskId, version);
    else if (taskId === undefined) this.nudge();
    // An ended task of a concurrency key freed a slot: a task waiting for it is due.
    else if (record !== undefined && isTerminal(record.status) && slotOf(record.request) === null) return;
    else {
      this.owed.task(taskId);
      this.wake?.();
    }
  }

  /**
   * Tells each new run of the changes its task went through while the claim was in flight, and
   * sends the worker to the outbox again when anything else changed meanwhile.
   */
  private replaySeen(claimed: readonly TaskRecord[]): void {
    const news = this.seen?.replay(claimed, (taskId, version) => this.executor.observe(taskId, version)) ?? [];
    if (news === 'all') this.nudge();
    else for (const taskId of news) this.owed.task(taskId);
  }

  /** A look at the outbox at `at` (beyond one timer's reach, the poll finds it). */
  private lookAt(at: number): void {
    const delay = at - this.port.now();
    if (this.stopping || delay > 2 ** 31 - 1) return;
    const timer = setTimeout(
      () => {
        this.wakeTimers.delete(timer);
        // The timer runs on the monotonic clock, the wake time on the service's: a timer that
        // fires before that clock reaches it (both round to the millisecond; a wall clock being
        // slewed runs slow) is set again for the rest, or the look would find the task not yet
        // due and it would wait for the poll.
        if (this.port.now() < at) this.lookAt(at);
        else this.nudge();
      },
      Math.max(0, delay),
    );
    // A timer must not keep a closing process alive.
    timer.unref();
    this.wakeTimers.add(timer);
  }

  /** A look owed at every task. */
  private nudge(): void {
    this.owed.every();
    this.wake?.();
  }

  /** Whether the loop has something to do: a look owed and a slot free for it, or a stop. */
  private ready(): boolean {
    return this.stopping || (this.owed.any && this.executor.busy + this.waiting.size + this.reserved < this.concurrency);
  }

  /**
   * Waits until the loop is ready (a change event, a finished run freeing a slot for a look owed)
   * or `ms` pass; at once if it is ready already. True when the time ran out.
   */
  private idle(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.ready()) {
        resolve(false);
        return;
      }
      const timer = setTimeout(() => {
        this.wake = null;
        resolve(true);
      }, ms);
      this.wake = () => {
        if (!this.ready()) return;
        this.wake = null;
        clearTimeout(timer);
        resolve(false);
      };
    });
  }
}
