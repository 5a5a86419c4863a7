import { clipProgress } from './progress-event.js';
import type { ProgressEvent } from './types.js';

/** A task's progress goes out at most about once per window of this length (ms). */
export const PROGRESS_WINDOW_MS = 50;

/** Tasks whose progress may wait for the next window at once; the progress of any more is dropped. */
export const PROGRESS_PENDING_TASKS = 1000;

/**
 * Coalesces the progress a store publishes, per task: the first progress of a task in a window
 * goes out at once, what the task reports after it in the same window waits for the window's end,
 * where only its latest is sent. A handler that reports in a tight loop thus sends one event per
 * window (two in its first), not one per call, and after a quiet window the next goes out at once.
 *
 * `take` and `flush` hand the waiting progress of some tasks over early, to go out ahead of their change
 * notification: the last progress of a task before it ends is not overtaken by its final status.
 * `send` must not throw; what it cannot deliver is lost, as progress may be.
 *
 * Not a `Batcher` (batcher.ts): a rate limit per task, not a gather-then-flush. A quiet task's
 * progress goes at once, not after a gathering; the window's clock runs from that send, members
 * or none (it forgets, at each window's end, which tasks sent), which no batch schedule expresses;
 * and `send` is synchronous, with nothing in flight to bound and no member to settle. What goes out
 * at a window's end is handed to the store's own batch (the change notifier's, on PostgreSQL).
 */
export class ProgressBuffer {
  /** Tasks that sent in the current window: their next progress waits. */
  private recent = new Set<string>();
  private readonly pending = new Map<string, ProgressEvent>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly send: (events: ProgressEvent[]) => void,
    private readonly windowMs = PROGRESS_WINDOW_MS,
  ) {}

  /** Queues `event` (clipped): sent now, or at the window's end if its task sent in this window. */
  add(event: ProgressEvent): void {
    if (this.closed) return;
    const clipped = clipProgress(event);
    if (clipped === null) return;
    const { taskId } = clipped;
    if (!this.recent.has(taskId) && !this.pending.has(taskId)) {
      this.recent.add(taskId);
      this.arm();
      this.send([clipped]);
      return;
    }
    if (!this.pending.has(taskId) && this.pending.size >= PROGRESS_PENDING_TASKS) return;
    this.pending.set(taskId, clipped);
  }

  /** The waiting progress of `taskIds`, removed from the buffer: the caller sends it now. */
  take(taskIds: Iterable<string>): ProgressEvent[] {
    if (this.pending.size === 0) return [];
    const taken: ProgressEvent[] = [];
    for (const taskId of taskIds) {
      const event = this.pending.get(taskId);
      if (event === undefined) continue;
      this.pending.delete(taskId);
      taken.push(event);
    }
    return taken;
  }

  /** Sends the waiting progress of `taskIds` now. */
  flush(taskIds: Iterable<string>): void {
    const taken = this.take(taskIds);
    if (taken.length > 0) this.send(taken);
  }

  /** Sends what still waits and stops; later progress is dropped. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    const rest = [...this.pending.values()];
    this.pending.clear();
    if (rest.length > 0) this.send(rest);
  }

  private arm(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => this.tick(), this.windowMs);
    // Progress alone must not keep a process alive.
    this.timer.unref();
  }

  private tick(): void {
    const due = [...this.pending.values()];
    this.pending.clear();
    // A task that sends at a window's end waits out the next window before sending again.
    this.recent = new Set(due.map((event) => event.taskId));
    if (this.recent.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
    if (due.length > 0) this.send(due);
  }
}
