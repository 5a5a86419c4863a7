import type { AuditEntry } from './types.js';

/** Stores one batch of audit lines, all or none (one multi-row INSERT). */
export type AuditBatchInsert = (batch: readonly AuditEntry[]) => Promise<void>;

/** What the writer tells its store's owner: lines it could not store, and why. */
export type AuditProblem = (message: string, fields: Record<string, unknown>) => void;

export interface AuditWriterOptions {
  /** Whether an insert error belongs to the lines (bad data: drop them) rather than to the database (retry). */
  isLineError?: (error: unknown) => boolean;
  /** Most lines queued; past it the oldest are dropped, and said so (default 10,000). */
  maxQueue?: number;
  onProblem?: AuditProblem;
}

/** Most lines per batch: bounds one statement's parameters (PostgreSQL allows 65,535). */
const MAX_BATCH = 500;

/**
 * Appends audit lines for decisions made outside a store write (reads, blocked requests) without
 * holding up the reply: lines queue in memory and go out together, many rows to one INSERT, on
 * the next turn of the event loop. How a batch is stored is the store's (`insertBatch`); the
 * queueing, batching and retrying are the same for any store.
 *
 * It cannot be jammed: a batch that fails for its data is retried line by line and the lines
 * the database refuses are dropped (and reported), so one bad line never holds up the others; a
 * batch that fails for the database (unreachable, restarting) stays queued and is retried with
 * backoff; the queue is bounded, and what falls off it is reported. `drain()` (before reading a
 * trail, and on close) waits until the queue is empty. What a crash of this process can lose is
 * the lines of its last few milliseconds of reads — never a task record, and never a decision
 * written with one (those are in the write's own transaction).
 */
export class AuditWriter {
  private readonly queue: AuditEntry[] = [];
  private flushing: Promise<void> | null = null;
  private failures = 0;
  private dropped = 0;
  private readonly maxQueue: number;

  constructor(
    private readonly insertBatch: AuditBatchInsert,
    private readonly options: AuditWriterOptions = {},
  ) {
    this.maxQueue = options.maxQueue ?? 10_000;
  }

  /** Lines waiting to be stored. */
  get pending(): number {
    return this.queue.length;
  }

  append(entry: AuditEntry): void {
    this.queue.push(entry);
    if (this.queue.length > this.maxQueue) {
      const over = this.queue.length - this.maxQueue;
      this.queue.splice(0, over);
      // Reported once per run of drops, not once per line: a stalled database must not flood the log.
      if (this.dropped === 0) this.report('audit queue full: dropping the oldest read-decision lines', { maxQueue: this.maxQueue });
      this.dropped += over;
    }
    this.flushing ??= this.flush();
  }

  /** Resolves once every line appended so far is stored, or after `timeoutMs`; what is left is reported. */
  async drain(timeoutMs = Infinity): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    while (this.flushing !== null && Date.now() < giveUpAt) {
      const left = giveUpAt - Date.now();
      await (Number.isFinite(left) ? Promise.race([this.flushing, new Promise((resolve) => setTimeout(resolve, left))]) : this.flushing);
    }
    if (this.queue.length > 0) this.report('audit lines not stored before the writer stopped', { lines: this.queue.length });
  }

  private report(message: string, fields: Record<string, unknown>): void {
    try {
      this.options.onProblem?.(message, fields);
    } catch {
      // A failing reporter must not stop the writer.
    }
  }

  private async flush(): Promise<void> {
    // One turn of the event loop lets the replies go first and concurrent reads join the batch.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.slice(0, MAX_BATCH);
        await this.store(batch);
        this.queue.splice(0, batch.length);
        this.failures = 0;
        if (this.dropped > 0) {
          this.report('audit queue drained after dropping lines', { dropped: this.dropped });
          this.dropped = 0;
        }
      }
      this.flushing = null;
    } catch (error) {
      this.failures++;
      if (this.failures === 1 || this.failures % 20 === 0) this.report('audit lines not stored; retrying', { error: String(error), failures: this.failures });
      // Keep the lines and try again shortly; the queue is only emptied by a stored batch.
      await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** this.failures, 2000)));
      this.flushing = this.flush();
    }
  }

  /** One batch; when its data is at fault, each line on its own, dropping those refused. */
  private async store(batch: readonly AuditEntry[]): Promise<void> {
    try {
      await this.insertBatch(batch);
    } catch (error) {
      if (this.options.isLineError?.(error) !== true) throw error;
      for (const line of batch) {
        try {
          await this.insertBatch([line]);
        } catch (lineError) {
          if (this.options.isLineError(lineError) !== true) throw lineError;
          this.report('audit line refused by the database; dropped', { decision: line.decision, surface: line.surface, error: String(lineError) });
        }
      }
    }
  }
}
