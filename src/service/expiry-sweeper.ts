import { randomUUID } from 'node:crypto';
import { TasklatchError } from '../core/errors.js';
import type { Millis } from '../core/types.js';
import type { SweepOutcome, TaskStore } from '../store/types.js';
import type { Guard } from './guard.js';

export interface SweeperOptions {
  /** Time between sweeps (ms; 0 turns the expiry sweep off). */
  intervalMs?: number;
  /**
   * How long a finished or expired task and its audit trail are kept (ms; default 7 days): a
   * task with a ttl goes this long after it expired, a terminal one without a ttl this long
   * after its last update, and audit rows whose task is gone once they are this old.
   */
  retentionMs?: number;
  /** Records deleted (tasks ended) per statement: bounded, so a pass never holds long locks. */
  batchSize?: number;
  /** Batches per pass at most; the rest waits for the next pass. */
  maxBatches?: number;
  /**
   * Time between passes that end tasks whose question is past its deadline (ms; default 1000,
   * 0 turns them off). The deadline is only as punctual as this.
   */
  inputDeadlineIntervalMs?: number;
  onError?: (error: unknown) => void;
}

/** The default retention: a week. */
export const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000;

/** What a sweep removed: tasks, and rows of both audit tables. */
export interface SweepTotals {
  tasks: number;
  auditRows: number;
}

/** The guard's parts the sweeper's passes go through: the store (each round trip timed), and the answers' deadline pass. */
export type SweptGuard = Pick<Guard, 'context' | 'answers'>;

/**
 * Upkeep on timers: removes tasks past their retention with their audit trails (and audit rows
 * whose task is gone) in bounded batches, and ends tasks whose question went unanswered past
 * its deadline. Every operation already treats an expired record as out of reach (a read
 * answers it as expired until it is removed, then as not found: the same reply on the wire);
 * the sweep only reclaims the space. The deadline pass is what makes a deadline happen at all.
 * Several processes may run both against one store at once: every write is conditional.
 *
 * Given the guard (`SweptGuard`), the deadline pass goes through its answers' part, so each ended
 * task is published on its change feed (waiting results in this process wake), and each round
 * trip is timed on its events; given a bare store, both passes go to the store.
 */
export class ExpirySweeper {
  private timer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private deadlineRunning: Promise<unknown> | null = null;
  private readonly store: TaskStore;
  private readonly guard: SweptGuard | null;
  private readonly intervalMs: number;
  private readonly deadlineIntervalMs: number;
  private readonly batchSize: number;
  private readonly maxBatches: number;
  private readonly retentionMs: number;

  constructor(
    source: TaskStore | SweptGuard,
    private readonly clock: () => Millis,
    private readonly options: SweeperOptions = {},
  ) {
    this.guard = 'answers' in source ? source : null;
    this.store = 'answers' in source ? source.context.store : source;
    this.intervalMs = options.intervalMs ?? 60_000;
    this.deadlineIntervalMs = options.inputDeadlineIntervalMs ?? 1000;
    this.batchSize = options.batchSize ?? 500;
    this.maxBatches = options.maxBatches ?? 100;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    if (!Number.isSafeInteger(this.retentionMs) || this.retentionMs < 0) {
      throw new TasklatchError('INVALID_INPUT', `retentionMs takes a whole number of milliseconds, 0 or more, got ${String(options.retentionMs)}`);
    }
  }

  /** Runs each pass on its own timer until `stop()`; the timers never keep the process alive. */
  start(): void {
    if (this.timer !== null || this.deadlineTimer !== null) return;
    if (this.intervalMs > 0) {
      this.timer = setInterval(() => {
        this.running ??= this.guarded(() => this.sweepOnce()).finally(() => (this.running = null));
      }, this.intervalMs);
      this.timer.unref();
    }
    if (this.deadlineIntervalMs > 0) {
      this.deadlineTimer = setInterval(() => {
        this.deadlineRunning ??= this.guarded(() => this.failOverdueOnce()).finally(() => (this.deadlineRunning = null));
      }, this.deadlineIntervalMs);
      this.deadlineTimer.unref();
    }
  }

  /** One sweep: batches until one reaches no bound (or `maxBatches`); returns what went. */
  async sweepOnce(): Promise<SweepTotals> {
    const { guard } = this;
    const store: Pick<TaskStore, 'sweepExpired'> =
      guard === null
        ? this.store
        : { sweepExpired: (input) => guard.context.timed('sweepExpired', guard.context.started(), guard.context.store.sweepExpired(input)) };
    return sweepStore(store, { now: this.clock(), retentionMs: this.retentionMs, batchSize: this.batchSize, maxBatches: this.maxBatches });
  }

  /** One deadline pass: batches until one comes back short (or `maxBatches`); returns tasks ended. */
  async failOverdueOnce(): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.maxBatches; i++) {
      const ended =
        this.guard !== null
          ? await this.guard.answers.failOverdueInputs({ limit: this.batchSize })
          : await this.store.failOverdueInputs({ now: this.clock(), limit: this.batchSize, correlationId: randomUUID() });
      total += ended.length;
      // A short batch means nothing else was due; a full one may have left some (or skipped a
      // task that moved, which the next pass looks at again).
      if (ended.length < this.batchSize) break;
    }
    return total;
  }

  /** Stops both timers and waits for a pass still running. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    if (this.deadlineTimer !== null) clearInterval(this.deadlineTimer);
    this.timer = null;
    this.deadlineTimer = null;
    await Promise.all([this.running, this.deadlineRunning]);
  }

  /** A failed pass is reported and tried again on the next tick, never thrown from a timer. */
  private guarded<T>(pass: () => Promise<T>): Promise<T | null> {
    return pass().catch((error: unknown) => {
      this.options.onError?.(error);
      return null;
    });
  }
}

/** Retention batches of `store` at `now` until one reaches no bound, at most `maxBatches` (`tasklatch prune` too). */
export async function sweepStore(
  store: Pick<TaskStore, 'sweepExpired'>,
  input: { now: Millis; retentionMs: number; batchSize: number; maxBatches: number },
): Promise<SweepTotals> {
  const total: SweepTotals = { tasks: 0, auditRows: 0 };
  for (let i = 0; i < input.maxBatches; i++) {
    const batch: SweepOutcome = await store.sweepExpired({ now: input.now, limit: input.batchSize, retentionMs: input.retentionMs });
    total.tasks += batch.tasks;
    total.auditRows += batch.auditRows;
    if (!batch.more) break;
  }
  return total;
}
