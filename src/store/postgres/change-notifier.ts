import type pg from 'pg';
import { NOTIFY_CHANGES } from './listener.js';

/** A committed change other processes are told of: the task and its version after the change. */
export interface Change {
  taskId: string;
  version: number;
}

/**
 * Sends the change notifications of committed writes, batched: the changes that arrive while
 * one batch is in flight go out together in the next, as one statement on a connection that
 * commits asynchronously.
 *
 * Why not NOTIFY inside the writing transaction: PostgreSQL takes one database-wide lock for
 * every notifying commit and holds it until the commit is flushed, so notifying writers commit
 * one at a time and never share a WAL flush (pgbench on the admission statements, 16 clients:
 * about a quarter of the rate without the NOTIFY). Sent after the commit, the notification still
 * follows the data it announces, and `notify` resolves only once it is sent: a write is
 * acknowledged to its caller after its notification, so a caller never holds an answer whose
 * change other processes cannot hear of (short of a lost listener connection, which the
 * listeners answer by looking again at everything). A notification that cannot be sent is
 * reported, not thrown: the write it follows is committed.
 */
export class ChangeNotifier {
  private pending: { changes: readonly Change[]; done: () => void }[] = [];
  private flushing = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly onProblem: (message: string, fields: Record<string, unknown>) => void,
  ) {}

  /** Resolves once `changes` are sent (or their sending failed and was reported). */
  notify(changes: readonly Change[]): Promise<void> {
    if (changes.length === 0) return Promise.resolve();
    return new Promise<void>((done) => {
      this.pending.push({ changes, done });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        const payloads = batch.flatMap((b) => b.changes.map((c) => `${c.taskId}:${c.version}`));
        try {
          await this.pool.query(NOTIFY_CHANGES, [payloads]);
        } catch (error) {
          this.onProblem('change notifications not sent', { count: payloads.length, error: String(error) });
        }
        for (const b of batch) b.done();
      }
    } finally {
      this.flushing = false;
    }
  }
}
