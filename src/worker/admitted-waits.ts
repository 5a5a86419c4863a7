import type { TaskRecord } from '../core/types.js';
import type { WorkerPort } from '../service/worker-port.js';
import type { RunLogger } from './run-events.js';
import type { TaskExecutor } from './task-executor.js';

/** A task waiting for a slot, and the highest version a change named meanwhile, if any. */
interface WaitingTask {
  record: TaskRecord;
  seen: number | undefined;
}

/**
 * The tasks leased to a worker by their admission that found every slot taken when it
 * committed, oldest first. Each counts as a slot taken, starts when a handler returns
 * (`handlerDone`), or, when none returned within `waitMs`, is handed to `timedOut` (its lease is
 * given back).
 *
 * Why they exist: an admission in flight holds one of the worker's slots (`Worker.reserve`)
 * through its round trip, running nothing. With `waitMs` above 0 a worker holds up to its
 * concurrency more admissions than it has open slots, so admissions that arrive faster than
 * their round trips still lease their tasks in their own transaction, and a task whose
 * admission commits with every slot taken waits here for the next handler to return instead of
 * in the outbox for a claim of its own (a transaction and its round trips). It holds them only
 * while its handlers typically return within a quarter of `waitMs` (`holdsBeyond`): a worker of
 * long handlers leases only to its open slots, leaving the rest to any worker at once. A task
 * never waits here longer than `waitMs`; should no handler return by then, its lease goes back.
 */
export class AdmittedWaits {
  private readonly entries: Array<WaitingTask & { timer: NodeJS.Timeout }> = [];
  /** How long handlers take here: a moving average, null before the first returned. */
  private typicalMs: number | null = null;

  /** `launch` starts a task's run on `executor`, a worker of `concurrency` slots. */
  constructor(
    readonly waitMs: number,
    private readonly executor: TaskExecutor,
    private readonly concurrency: number,
    private readonly launch: (record: TaskRecord) => void,
    private readonly timedOut: (record: TaskRecord) => void,
  ) {}

  get size(): number {
    return this.entries.length;
  }

  /** Whether admissions may lease beyond the open slots: handlers here typically return well within `waitMs`. */
  get holdsBeyond(): boolean {
    return this.waitMs > 0 && this.typicalMs !== null && this.typicalMs * 4 < this.waitMs;
  }

  /** A handler returned after `ms`: its time counts, and the waiting tasks its slot and any other free take start. */
  handlerDone(ms: number): void {
    this.typicalMs = this.typicalMs === null ? ms : this.typicalMs * 0.9 + ms * 0.1;
    this.start();
  }

  /** Runs a task its admission leased here, or, every slot taken, has it wait for the next that frees. */
  admitted(record: TaskRecord): void {
    if (this.entries.length === 0 && this.executor.busy < this.concurrency) this.launch(record);
    else this.add(record);
  }

  private add(record: TaskRecord): void {
    const entry = {
      record,
      seen: undefined as number | undefined,
      timer: setTimeout(() => {
        const at = this.entries.indexOf(entry);
        if (at < 0) return;
        this.entries.splice(at, 1);
        this.timedOut(record);
      }, this.waitMs),
    };
    // A timer must not keep a closing process alive.
    entry.timer.unref();
    this.entries.push(entry);
  }

  /** Starts waiting tasks, oldest first, while fewer than `concurrency` handlers run. */
  private start(): void {
    while (this.executor.busy < this.concurrency) {
      const next = this.next();
      if (next === undefined) return;
      this.launch(next.record);
      // What changed while it waited (a cancellation written elsewhere, say) is its run's news now.
      if (next.seen !== undefined) this.executor.observe(next.record.taskId, next.seen);
    }
  }

  /** The oldest waiting task, taken out; undefined when none waits. */
  private next(): WaitingTask | undefined {
    const entry = this.entries.shift();
    if (entry === undefined) return undefined;
    clearTimeout(entry.timer);
    return { record: entry.record, seen: entry.seen };
  }

  /**
   * Notes a change of `taskId` at `version` (unknown: one past the leased record's, so that its
   * run reads the task) when it waits here; false when it does not.
   */
  note(taskId: string, version: number | undefined): boolean {
    const entry = this.entries.find((e) => e.record.taskId === taskId);
    if (entry === undefined) return false;
    entry.seen = version === undefined ? entry.record.version + 1 : Math.max(version, entry.seen ?? 0);
    return true;
  }

  /** Every waiting task, taken out (a stopping worker gives their leases back). */
  drain(): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (let entry = this.next(); entry !== undefined; entry = this.next()) out.push(entry.record);
    return out;
  }
}

/**
 * Gives back the lease of a task that never started (its admission leased it to `owner`), so
 * that any worker may claim it at once: the store wakes the idle ones. A lease the store did not
 * take back runs out as any lease of a worker that stopped.
 */
export async function giveBack(port: WorkerPort, record: TaskRecord, owner: string, logger: RunLogger): Promise<void> {
  const fence = { taskId: record.taskId, authKey: record.authKey, owner, version: record.version };
  const released = await port.release({ fence }).catch(() => false);
  logger.run(record, owner).emit('worker:admissionGivenBack', { taskId: record.taskId, released });
}
