import type pg from 'pg';
import { isTaskStatus, isTerminal, type TaskRecord } from '../../core/types.js';
import { encodeTerminalRecord } from '../change-record.js';
import type { ProgressBuffer } from '../progress-buffer.js';
import { noticesOf, type Change, type Notice } from './listener.js';
import { encodedProgress } from './progress.js';
import { appliedTaskRow, rowToRecord } from './row.js';
import type { Announcement } from './write-batcher.js';

/** How many of the tasks this process admitted last `Announcer` remembers. */
const REMEMBERED = 4096;

/** Whether a status write with `status` ends its task. */
export function endsTask(status: string): boolean {
  return isTaskStatus(status) && isTerminal(status);
}

/**
 * A change as it travels to other processes; a terminal record goes with it, sealed under
 * `recordKey` when the store has one: a waiter elsewhere answers from it without a read.
 */
export function changeOf(c: Change | TaskRecord, recordKey: Buffer | null): Change {
  const record = 'status' in c && recordKey !== null ? encodeTerminalRecord(c, recordKey) : null;
  return record === null ? { taskId: c.taskId, version: c.version } : { taskId: c.taskId, version: c.version, record };
}

/**
 * Which writes that end a task announce themselves from inside their transaction
 * (write-batcher.ts `Announcement`), woken by the commit itself, and which after it
 * (`ChangeNotifier`). Inside costs the write one more round trip before its answer and a
 * notifying commit; it pays where the task's waiters are in other processes: a task admitted
 * elsewhere (a worker process, another server behind the same store), whose requestor is
 * connected there. A task admitted here has its requestor here most likely, and a task waited on
 * here (`ListenOptions.waitedHere`) has it here: either is woken by this process as the write
 * returns, and its end is told after the commit, as any other change.
 *
 * A terminal record travels only for a task no one here waits on (`recordKeyFor`): one waited on
 * here has its requestor here most likely, woken with the record by the write itself, and a
 * waiter elsewhere reads the task once. Sealing and sending every record cost the lifecycle
 * (each task waited on where it runs) about 6 % of its throughput.
 */
export class Announcer {
  /** The tasks this process admitted last (most recent last). */
  private readonly admittedHere = new Set<string>();
  /** Whether a task is waited on in this process now, as the listener's owner says. */
  private waitedHere: ((taskId: string) => boolean) | null = null;

  constructor(
    private readonly recordKey: () => Buffer | null,
    /** Where a task's waiting progress is taken from, to go ahead of its end. */
    private readonly progress: ProgressBuffer,
  ) {}

  /** `taskId` was admitted by this process. */
  admitted(taskId: string): void {
    this.admittedHere.add(taskId);
    if (this.admittedHere.size > REMEMBERED) {
      const oldest = this.admittedHere.values().next();
      if (oldest.done !== true) this.admittedHere.delete(oldest.value);
    }
  }

  /** Takes `waitedHere` (a listener's `ListenOptions.waitedHere`) until the function returned is called. */
  heeding(waitedHere: ((taskId: string) => boolean) | undefined): () => void {
    if (waitedHere === undefined) return () => undefined;
    this.waitedHere = waitedHere;
    return () => {
      if (this.waitedHere === waitedHere) this.waitedHere = null;
    };
  }

  /** The key that seals `taskId`'s terminal record for its change notification, or null when the record stays here. */
  recordKeyFor(taskId: string): Buffer | null {
    return this.waitedHere?.(taskId) === true ? null : this.recordKey();
  }

  /** The announcement of a write that ends `taskId`, or none when its end is told after the commit. */
  ending(taskId: string): TerminalAnnouncement | undefined {
    if (this.admittedHere.has(taskId) || this.waitedHere?.(taskId) === true) return undefined;
    return new TerminalAnnouncement(this.recordKey(), this.progress);
  }
}

/**
 * The announcement of a write that ends its task, made from the row the write returns: the
 * progress still waiting for the task, then its change with the sealed record, in the order
 * `ChangeNotifier` sends them.
 */
export class TerminalAnnouncement implements Announcement {
  sent = false;
  /** The task's waiting progress once taken: it goes with the change, inside the transaction or after the commit. */
  taken: string[] | null = null;

  constructor(
    private readonly recordKey: Buffer | null,
    private readonly progress: ProgressBuffer,
  ) {}

  notices(results: readonly pg.QueryResult[]): readonly Notice[] {
    const row = appliedTaskRow(results[0]);
    if (row === undefined) return [];
    const record = rowToRecord(row);
    this.taken ??= encodedProgress(this.progress.take([record.taskId]));
    return noticesOf(this.taken, [changeOf(record, this.recordKey)]);
  }
}
