import type pg from 'pg';
import type { AuditEntry } from '../types.js';
import { auditParams } from './row.js';

const COLUMNS = '(at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)';
const PER_ROW = 9;
const MAX_BATCH = 500;

/**
 * Appends audit lines for decisions made outside a store write (reads, blocked requests) without
 * holding up the reply: lines queue in memory and go out together, many rows to one INSERT, on
 * the next turn of the event loop. A failed batch stays queued and is retried; `drain()` (before
 * reading a trail, and on close) waits until the queue is empty. What a crash of this process
 * can lose is the lines of its last few milliseconds of reads — never a task record, and never
 * a decision written with one (those are in the write's own transaction).
 */
export class AuditWriter {
  private readonly queue: AuditEntry[] = [];
  private flushing: Promise<void> | null = null;
  private failures = 0;

  constructor(
    private readonly pool: pg.Pool,
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
        const values = batch.map((_, r) => `(${Array.from({ length: PER_ROW }, (_, c) => `$${r * PER_ROW + c + 1}`).join(', ')})`);
        await this.pool.query(`INSERT INTO task_audit ${COLUMNS} VALUES ${values.join(', ')}`, batch.flatMap(auditParams));
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
