import type { Millis } from '../../core/types.js';
import type { LookupOutcome, TaskRef } from '../types.js';
import { Batcher, MemberQueue } from '../batcher.js';
import type { Stamp } from './record-cache.js';

type Read = TaskRef & { now: Millis };

interface Pending {
  ref: Read;
  resolve: (outcome: LookupOutcome) => void;
  reject: (error: unknown) => void;
}

/**
 * The `get`s asked for in one turn of the event loop, answered together at its end against one
 * stamp of the file (see RecordCache). The stamp is one statement with a read transaction of its
 * own (two file locks and a stat: ~5 µs), as much as the row's own SELECT; the polls that arrive
 * together pay it once. It is taken after every read of the batch was asked for, so each still
 * sees every commit acknowledged before it began, by this process or another: a read never
 * shares a stamp taken before it.
 */
export class ReadBatcher {
  private readonly batcher = new Batcher<Pending>(
    {
      // The end of the turn: the polls that arrived together, answered synchronously (one batch).
      schedule: { at: 'turns', turns: 0 },
      flush: (batch) => this.answerAll(batch),
      fail: (batch, error) => {
        for (const pending of batch) pending.reject(error);
      },
    },
    new MemberQueue<Pending>(),
  );

  constructor(
    private readonly stamp: () => Stamp | null,
    private readonly read: (ref: Read, stamp: Stamp | null) => LookupOutcome,
  ) {}

  get(ref: Read): Promise<LookupOutcome> {
    return new Promise((resolve, reject) => this.batcher.add({ ref, resolve, reject }));
  }

  /** Answers every read waiting (at the end of the turn, or before the store closes). */
  answer(): void {
    this.batcher.flushNow();
  }

  private answerAll(batch: Pending[]): void {
    // A stamp that cannot be taken fails the turn's reads as a whole (`fail`).
    const stamp = this.stamp();
    for (const pending of batch) {
      try {
        pending.resolve(this.read(pending.ref, stamp));
      } catch (error) {
        pending.reject(error);
      }
    }
  }
}
