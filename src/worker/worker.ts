import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { checkAppName } from '../core/app-name.js';
import type { TaskRecord } from '../core/types.js';
import type { ClaimReservation } from '../service/admission-claims.js';
import type { TaskService } from '../service/task-service.js';
import { errorResult } from '../tools/invoke-tool.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
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
   * The application whose tasks this worker claims (a checked name; default: the service's app,
   * the one its admissions record). Tool names are unique within an app only.
   */
  app?: string;
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
  private readonly log: NonNullable<ExecutionHooks['log']>;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  /**
   * Whether the outbox owes a look: set by every change event (while a claim is in flight too:
   * an event then must not be lost, or a task admitted at that moment would wait for the
   * fallback poll), by a claim that filled every free slot (it may have left due tasks behind),
   * by a failed claim and by the poll; cleared before each claim. A finished run only wakes the
   * loop: with nothing owed, a free slot is no reason to look, and the worker waits for a change
   * event or the poll.
   */
  private nudged = false;
  /**
   * The changes seen while a claim is in flight, by task (the highest version, or undefined when
   * a writer did not say), and whether every task may have changed: a claimed task changed in
   * that window (cancelled by a request, say) before its run could watch it, and its run is told.
   */
  private seen: { tasks: Map<string, number | undefined>; all: boolean } | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Slots held for admissions in flight that may lease their task to this worker. */
  private reserved = 0;
  private withdraw: (() => void) | null = null;
  private readonly runs = new Set<Promise<void>>();
  /** The tools this worker runs: the claim takes only their tasks and leaves the rest in place. */
  private readonly toolNames: readonly string[];
  /** The app whose tasks it claims; the claim leaves every other app's tasks in place. */
  readonly app: string;
  private readonly tools: ToolRegistry;
  /** Looks owed at the wake time of a task this worker suspended (other processes find it at their poll). */
  private readonly wakeTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly service: TaskService,
    tools: ToolRegistry,
    options: WorkerOptions = {},
  ) {
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.concurrency = options.concurrency ?? 4;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.heartbeatMs = options.heartbeatMs ?? Math.max(50, Math.min(Math.floor(this.leaseMs / 3), service.limits.pollInterval));
    const { supports } = service;
    this.pollMs = options.pollMs ?? (supports.shared && !supports.listenNotify ? 500 : 5_000);
    this.maxAttempts = options.maxAttempts ?? 5;
    this.log = options.hooks?.log ?? (() => undefined);
    this.executor = new TaskExecutor(service, tools, options.hooks);
    this.executor.onSleep = (_taskId, wakeAt) => this.lookAt(wakeAt);
    this.toolNames = tools.names();
    this.tools = tools;
    this.app = options.app === undefined ? service.app : checkAppName(options.app, 'worker app');
  }

  /** Starts claiming. */
  start(): void {
    if (this.loop !== null) return;
    this.stopping = false;
    this.unsubscribe = this.service.changes.subscribeAll((taskId, version) => this.changed(taskId, version));
    this.withdraw = this.service.admissionClaims.offer(this);
    // Said once: a task of any other tool is never claimed here and waits for a worker that knows it.
    this.log('info', 'worker runs only the tasks of its app and tools; tasks of other apps and tools are left for workers that know them', {
      worker: this.id,
      app: this.app,
      tools: this.toolNames,
    });
    this.loop = this.run();
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
    this.unsubscribe?.();
    for (const timer of this.wakeTimers) clearTimeout(timer);
    this.wakeTimers.clear();
    await this.executor.drain(drainMs);
    await Promise.allSettled([...this.runs]);
  }

  private async run(): Promise<void> {
    let failures = 0;
    // The first look is owed: tasks may be due already.
    this.nudged = true;
    // The poll counts from the last look, not from the last wake-up: runs that finish more often
    // than the poll interval must not put off the look that finds expired leases.
    let lastLook = performance.now();
    while (!this.stopping) {
      const free = this.concurrency - this.executor.active - this.reserved;
      if (free > 0 && this.nudged) {
        // Cleared before the look at the outbox: whatever comes after it is news for the next look.
        this.nudged = false;
        lastLook = performance.now();
        this.seen = { tasks: new Map(), all: false };
        try {
          const claimed = await this.service.claim({
            owner: this.id,
            leaseMs: this.leaseMs,
            limit: free,
            maxAttempts: this.maxAttempts,
            abandonedResult: errorResult(`task abandoned after ${this.maxAttempts} attempts`),
            tools: this.toolNames,
            app: this.app,
          });
          failures = 0;
          for (const record of claimed) this.launch(record);
          this.replaySeen(claimed);
          // Every free slot filled: more tasks may be due, and the next free slot looks at once.
          if (claimed.length === free) this.nudged = true;
        } catch (error) {
          failures++;
          this.log('warn', 'claim failed; retrying', { error: String(error), failures });
          // What changed meanwhile is news for the next look.
          if (this.seen !== null && (this.seen.all || this.seen.tasks.size > 0)) this.nudge();
        } finally {
          this.seen = null;
        }
      }
      const interval = failures === 0 ? this.pollMs : Math.min(this.pollMs, 250 * 2 ** Math.min(failures, 4));
      // Owed already, the worker waits only for a free slot; the timer then just bounds the wait.
      const timedOut = await this.idle(this.nudged ? interval : Math.max(0, lastLook + interval - performance.now()));
      if (timedOut) this.nudged = true;
    }
  }

  /** Runs a task this worker holds the lease of. */
  private launch(record: TaskRecord): void {
    this.checkDefinition(record);
    const run = this.executor
      .execute(record, { owner: this.id, leaseMs: this.leaseMs, heartbeatMs: this.heartbeatMs })
      .then(
        (outcome) => outcome === 'completed' || outcome === 'failed',
        (error: unknown) => {
          this.log('error', 'task run failed', { taskId: record.taskId, error: String(error) });
          return false;
        },
      )
      .then((ended) => {
        this.runs.delete(run);
        // A run that ended its task leaves nothing due behind, and its slot is claimed only if a
        // look is owed (a change came while every slot was busy). Any other run (suspended,
        // drained, refused, or one that threw) may leave its task due again, and the changes
        // its task went through meanwhile were its own (an answer, say): the outbox is looked at.
        if (ended) this.wake?.();
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
    this.log('warn', "task admitted with another definition of its tool; running it with this worker's definition", {
      worker: this.id,
      app: this.app,
      taskId: record.taskId,
      tool: record.toolName,
      admittedDigest: record.toolDigest,
      workerDigest: own,
    });
  }

  /**
   * A free slot for a task of `tool` admitted in this process, leased to this worker by the
   * admission itself (see `AdmissionClaimers`); null when every slot is taken or held, for a
   * tool this worker does not run, and once it stops.
   */
  reserve(tool: string): ClaimReservation | null {
    // The admission records the service's app: a worker of another app must not take its task.
    if (this.loop === null || this.stopping || this.app !== this.service.app || !this.toolNames.includes(tool)) return null;
    if (this.concurrency - this.executor.active - this.reserved <= 0) return null;
    this.reserved++;
    let held = true;
    const free = () => {
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
        if (free()) this.launch(record);
      },
      // A slot free again: the loop may have waited for it with a look owed.
      release: () => {
        if (free()) this.wake?.();
      },
    };
  }

  /**
   * A change event. A change of a task this worker runs is its run's business (the run watches
   * it) and makes nothing else due; while a claim is in flight the change is noted and judged
   * when the claim returns (`replaySeen`); any other change sends the worker to the outbox.
   */
  private changed(taskId: string | undefined, version: number | undefined): void {
    if (taskId !== undefined && this.executor.runs(taskId)) return;
    if (this.seen !== null) this.note(this.seen, taskId, version);
    else this.nudge();
  }

  private note(seen: NonNullable<Worker['seen']>, taskId: string | undefined, version: number | undefined): void {
    if (taskId === undefined) {
      seen.all = true;
      return;
    }
    if (!seen.tasks.has(taskId)) {
      seen.tasks.set(taskId, version);
      return;
    }
    const before = seen.tasks.get(taskId);
    // Unknown wins over any version: the run must look.
    seen.tasks.set(taskId, before === undefined || version === undefined ? undefined : Math.max(before, version));
  }

  /**
   * Tells each new run of the changes its task went through while the claim was in flight, and
   * sends the worker to the outbox again when anything else changed meanwhile (the claim's own
   * records at the versions it claimed them are no news).
   */
  private replaySeen(claimed: readonly TaskRecord[]): void {
    const seen = this.seen;
    if (seen === null) return;
    const versions = new Map(claimed.map((record) => [record.taskId, record.version] as const));
    for (const record of claimed) {
      if (seen.all) this.executor.observe(record.taskId, undefined);
      else if (seen.tasks.has(record.taskId)) this.executor.observe(record.taskId, seen.tasks.get(record.taskId));
    }
    const news =
      seen.all ||
      [...seen.tasks].some(([taskId, version]) => {
        const mine = versions.get(taskId);
        return mine === undefined || version === undefined || version > mine;
      });
    if (news) this.nudge();
  }

  /** A look at the outbox at `at` (beyond one timer's reach, the poll finds it). */
  private lookAt(at: number): void {
    const delay = at - this.service.now();
    if (this.stopping || delay > 2 ** 31 - 1) return;
    const timer = setTimeout(() => {
      this.wakeTimers.delete(timer);
      this.nudge();
    }, Math.max(0, delay));
    // A timer must not keep a closing process alive.
    timer.unref();
    this.wakeTimers.add(timer);
  }

  private nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  /** Whether the loop has something to do: a look owed and a slot free for it, or a stop. */
  private ready(): boolean {
    return this.stopping || (this.nudged && this.executor.active + this.reserved < this.concurrency);
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
