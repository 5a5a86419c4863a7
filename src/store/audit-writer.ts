import { coerceError } from '../core/errors.js';
import { isStorableText } from '../core/text.js';
import { boundedAuditLine } from './audit-line.js';
import { addReadDecision, mergeReadAuditInto, readAuditKey, readAuditKeyOf, readAuditRow, type ReadAuditRow } from './read-audit.js';
import type { AuditEntry } from './types.js';
import { Batcher, KeyedQueue } from './batcher.js';

/** Stores one batch of aggregated rows, all or none (one upsert of distinct keys). */
export type AuditBatchInsert = (batch: readonly ReadAuditRow[]) => Promise<void>;

/** What the writer tells its store's owner: lines it could not store, and why. */
export type AuditProblem = (message: string, fields: Record<string, unknown>) => void;

export interface AuditWriterOptions {
  /** Whether an insert error belongs to the lines (bad data: drop them) rather than to the database (retry). */
  isLineError?: (error: unknown) => boolean;
  /** Most rows queued (distinct keys); past it the oldest are dropped, and said so (default 10,000). */
  maxQueue?: number;
  onProblem?: AuditProblem;
  /** How long lines gather before a batch goes out (ms, default `GATHER_MS`); 0: the next turn of the event loop. */
  gatherMs?: number;
}

/** Most lines per batch: bounds one statement's parameters (PostgreSQL allows 65,535). */
const MAX_BATCH = 500;

/**
 * How long lines gather before their batch goes out. Every batch is a write transaction (SQLite)
 * or a round trip (PostgreSQL) whatever its size; gathered over one turn of the event loop, a
 * server answering polls by the thousand sent one per turn, a fifth of its CPU per poll. Twenty
 * milliseconds make it fifty a second at most, and a burst of polls of one task one row.
 */
export const GATHER_MS = 20;

/**
 * Records decisions made outside a store write (reads, blocked requests) without holding up the
 * reply: they queue in memory as aggregated rows (`task_read_audit`, see read-audit.ts), so a
 * burst of polls of one task is one queued row whatever its length, and the queue goes out
 * together, one upsert of distinct keys, `GATHER_MS` after the first of them. How a batch is
 * stored is the store's (`insertBatch`); the queueing, batching and retrying are the same for
 * any store.
 *
 * It cannot be jammed: a line whose text cannot be stored is refused before it joins a batch
 * (and reported); a batch that fails for its data is retried line by line and the lines
 * the database refuses are dropped (and reported), so one bad line never holds up the others; a
 * batch that fails for the database (unreachable, restarting) stays queued and is retried with
 * backoff; the queue is bounded, and what falls off it is reported. `drain()` (before reading a
 * trail, and on close) waits until the queue is empty. What a crash of this process can lose is
 * the lines of its last few tens of milliseconds of reads — never a task record, and never a decision
 * written with one (those are in the write's own transaction).
 */
export class AuditWriter {
  /** Rows waiting, by key, oldest key first; a decision of a queued key adds to its row. */
  private readonly queue = new KeyedQueue<ReadAuditRow>(readAuditKey);
  private readonly batcher: Batcher<ReadAuditRow, KeyedQueue<ReadAuditRow>>;
  private failures = 0;
  /** Decisions dropped (the counts of the rows that fell off the queue) since the last stored batch. */
  private dropped = 0;
  private reportedFull = false;
  private readonly maxQueue: number;
  /** Rows of the batch being stored now: off the queue, not stored yet (merged back if it fails). */
  private storing = 0;
  /** Lines refused as not storable text, since this writer began. */
  private unstorable = 0;

  constructor(
    private readonly insertBatch: AuditBatchInsert,
    private readonly options: AuditWriterOptions = {},
  ) {
    this.maxQueue = options.maxQueue ?? 10_000;
    this.batcher = new Batcher(
      {
        // The replies go first and concurrent reads join the batch (`GATHER_MS`); lines that
        // came while a batch was out gather too, unless they already fill one; `drain` cuts the
        // wait short. One batch at a time.
        schedule: { at: 'timer', ms: options.gatherMs ?? GATHER_MS },
        maxBatch: MAX_BATCH,
        flush: (batch) => this.flush(batch),
        fail: (_batch, error) => this.retryLater(error),
      },
      this.queue,
    );
  }

  /** Rows waiting to be stored: queued, or in the batch being stored now. */
  get pending(): number {
    return this.queue.size + this.storing;
  }

  /**
   * One decision, counted into its row: the row is built only for the first decision of its key
   * in this batch, later ones add to it in place (every poll passes here).
   */
  count(decision: AuditEntry): void {
    const entry = boundedAuditLine(decision);
    // Checked before it joins: in the batch's statement a NUL or a lone surrogate would fail the
    // upsert of every line beside it (they would then go one by one, each a round trip). Refused
    // as the database would refuse it, alone.
    if (!isStorableLine(entry)) {
      // Reported the first time and every thousandth: a caller sending such lines must not flood the log.
      this.unstorable += 1;
      if (this.unstorable % 1000 === 1) {
        this.report('audit lines not storable text (a NUL or an unpaired surrogate); dropped', { decision: entry.decision, dropped: this.unstorable });
      }
      return;
    }
    const key = readAuditKeyOf(entry);
    const held = this.queue.get(key);
    if (held === undefined) this.queue.set(key, readAuditRow(entry));
    else addReadDecision(held, entry);
    if (this.queue.size > this.maxQueue) {
      let over = this.queue.size - this.maxQueue;
      for (const oldest of this.queue.keys()) {
        if (over-- <= 0) break;
        this.dropped += this.queue.get(oldest)?.count ?? 0;
        this.queue.delete(oldest);
      }
      // Reported once per run of drops, not once per line: a stalled database must not flood the log.
      if (this.dropped > 0 && !this.reportedFull) this.report('audit queue full: dropping the oldest read-decision lines', { maxQueue: this.maxQueue });
      this.reportedFull = true;
    }
    this.batcher.wake();
  }

  /** The queue owns its rows (taken off it while stored): a row of a queued key adds to it in place. */
  private merge(row: ReadAuditRow): void {
    const key = readAuditKey(row);
    const held = this.queue.get(key);
    if (held === undefined) this.queue.set(key, row);
    else mergeReadAuditInto(held, row);
  }

  /** Resolves once every line appended so far is stored, or after `timeoutMs`; what is left is reported. */
  async drain(timeoutMs = Infinity): Promise<void> {
    await this.batcher.drain(timeoutMs);
    // A batch being stored when the time is up is not stored yet: its rows count too.
    if (this.pending > 0) this.report('audit lines not stored before the writer stopped', { lines: this.pending });
  }

  private report(message: string, fields: Record<string, unknown>): void {
    try {
      this.options.onProblem?.(message, fields);
    } catch {
      // A failing reporter must not stop the writer.
    }
  }

  /**
   * One batch, taken off the queue while stored, so decisions arriving meanwhile start new rows
   * (the upsert adds them up); a failed batch is merged back in.
   */
  private async flush(batch: ReadAuditRow[]): Promise<void> {
    this.storing = batch.length;
    try {
      await this.store(batch);
    } catch (error) {
      const newer = [...this.queue.values()];
      this.queue.clear();
      for (const row of [...batch, ...newer]) this.merge(row);
      throw error;
    } finally {
      this.storing = 0;
    }
    this.failures = 0;
    if (this.dropped > 0) {
      this.report('audit queue drained after dropping lines', { dropped: this.dropped });
      this.dropped = 0;
      this.reportedFull = false;
    }
  }

  /** Keeps the lines and tries again shortly (the batch's slot held meanwhile); the queue is only emptied by a stored batch. */
  private async retryLater(error: unknown): Promise<void> {
    this.failures++;
    if (this.failures === 1 || this.failures % 20 === 0)
      this.report('audit lines not stored; retrying', { reason: coerceError(error).message, failures: this.failures });
    await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** this.failures, 2000)));
  }

  /** One batch; when its data is at fault, each row on its own, dropping those refused. */
  private async store(batch: readonly ReadAuditRow[]): Promise<void> {
    try {
      await this.insertBatch(batch);
    } catch (error) {
      if (this.options.isLineError?.(error) !== true) throw error;
      for (const line of batch) {
        try {
          await this.insertBatch([line]);
        } catch (lineError) {
          if (this.options.isLineError(lineError) !== true) throw lineError;
          this.report('audit line refused by the database; dropped', {
            decision: line.decision,
            surface: line.surface,
            count: line.count,
            error: String(lineError),
          });
        }
      }
    }
  }
}

/** Whether every text of an audit line can be stored (its task id was made so by `boundedAuditLine`). */
function isStorableLine(entry: AuditEntry): boolean {
  return (
    isStorableText(entry.authKey) &&
    isStorableText(entry.correlationId) &&
    isStorableText(entry.surface) &&
    isStorableText(entry.decision) &&
    (entry.status == null || isStorableText(entry.status)) &&
    (entry.detail == null || isStorableText(entry.detail))
  );
}
