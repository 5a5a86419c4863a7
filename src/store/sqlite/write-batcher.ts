import type { SqliteDatabase } from './driver.js';
import { Batcher, MemberQueue } from '../batcher.js';
import { inTransaction } from './transactions.js';

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * The writes asked for in one turn of the event loop, committed together at its end: one
 * `BEGIN IMMEDIATE` transaction, each write in a savepoint of its own, run in the order they
 * were asked for. A write that throws rolls back its savepoint alone and fails alone; the others
 * commit. Every caller is answered after the commit, so an acknowledged write is a committed
 * one; when the transaction itself fails (the lock not had within the busy timeout, the disk)
 * every write of the turn fails and none is stored. A lone write is its own transaction, as
 * before.
 *
 * What it saves is the commit: each is a lock taken on the file, a WAL append of every page the
 * transaction touched and an update of the WAL index, and the admissions that arrive together
 * touch the same pages (the ends of the same indexes).
 */
export class WriteBatcher {
  private readonly batcher = new Batcher<Pending>(
    {
      // The end of the turn: the admissions that arrived together share the commit.
      schedule: { at: 'turns', turns: 0 },
      flush: (batch) => this.commitAll(batch),
      fail: (batch, error) => {
        for (const pending of batch) pending.reject(error);
      },
    },
    new MemberQueue<Pending>(),
  );

  constructor(private readonly db: SqliteDatabase) {}

  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => this.batcher.add({ write, resolve: resolve as (value: unknown) => void, reject }));
  }

  /** Commits every write waiting (at the end of the turn, or before the store closes). */
  commit(): void {
    this.batcher.flushNow();
  }

  private commitAll(batch: Pending[]): void {
    if (batch.length === 1) {
      const [only] = batch as [Pending];
      try {
        only.resolve(inTransaction(this.db, only.write));
      } catch (error) {
        only.reject(error);
      }
      return;
    }
    const outcomes: Outcome[] = [];
    try {
      inTransaction(this.db, () => {
        for (const pending of batch) {
          try {
            // Nested: a savepoint of the turn's transaction.
            outcomes.push({ ok: true, value: inTransaction(this.db, pending.write) });
          } catch (error) {
            outcomes.push({ ok: false, error });
            // An I/O or disk-full error can end the whole transaction: nothing more runs outside it.
            if (!this.db.inTransaction) throw error;
          }
        }
      });
    } catch (error) {
      // Nothing of the turn is stored: each write fails, with its own error where it had one.
      batch.forEach((pending, i) => {
        const outcome = outcomes[i];
        pending.reject(outcome !== undefined && !outcome.ok ? outcome.error : error);
      });
      return;
    }
    batch.forEach((pending, i) => {
      const outcome = outcomes[i] as Outcome;
      if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(outcome.error);
    });
  }
}
