import type { AuditEntry } from './types.js';

/** Stores one batch of audit lines, all or none (one multi-row INSERT). */
export type AuditBatchInsert = (batch: readonly AuditEntry[]) => Promise<void>;

/** Most lines per batch: bounds one statement's parameters (PostgreSQL allows 65,535). */
const MAX_BATCH = 500;

/**
 * Appends audit lines for decisions made outside a store write (reads, blocked requests) without
 * holding up the reply: lines queue in memory and go out together, many rows to one INSERT, on
 * the next turn of the event loop. How a batch is stored is the store's (`insertBatch`); the
 * queueing, batching and retrying are the same for any store. A failed batch stays queued and
 * is retried; `drain()` (before reading a trail, and on close) waits until the queue is empty. What a crash of this process
 * can lose is the lines of its last few milliseconds of reads — never a task record, and never
 * a decision written with one (those are in the write's own transaction).
 */
export class AuditWriter {
  private readonly queue: AuditEntry[] = [];
  private flushing: Promise<void> | null = null;
  private failures = 0;

  constructor(
    private readonly insertBatch: AuditBatchInsert,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  append(entry: AuditEntry): void {
    this.queue.push(entry);
    this.flushing ??= this.flush();
  }

  /** Resolves once every line appended so far is stored, or after `timeoutMs` (closing a store whose server is gone). */
  async drain(timeoutMs = Infinity): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    while (this.flushing !== null && Date.now() < giveUpAt) {
      const left = giveUpAt - Date.now();
      await (Number.isFinite(left) ? Promise.race([this.flushing, new Promise((resolve) => setTimeout(resolve, left))]) : this.flushing);
    }
  }

  private async flush(): Promise<void> {
    // One turn of the event loop lets the replies go first and concurrent reads join the batch.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.slice(0, MAX_BATCH);
        await this.insertBatch(batch);
        this.queue.splice(0, batch.length);
        this.failures = 0;
      }
      this.flushing = null;
    } catch (error) {
      this.onError(error);
      this.failures++;
      // Keep the lines and try again shortly; the queue is only emptied by a stored batch.
      await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** this.failures, 2000)));
      this.flushing = this.flush();
    }
  }
}
