import type { StepRecord } from '../core/step-rules.js';
import { journalBytesMessage, journalStepsMessage } from '../core/step-value.js';
import type { TaskLimits } from '../service/limits.js';
import type { StepError } from '../core/step-rules.js';

/**
 * What one run knows of its journal's size: the rows it read and those it has written since
 * (the run is the only writer under its fence), by position, with their values' bytes. It says,
 * before a write, whether the journal's bounds let it through, so that a step past the row bound
 * fails before its function runs (nothing recorded, no side effect) and one whose value would
 * pass the byte bound fails for good with an error naming it. The store decides again under its
 * lock (`BLOCK_JOURNAL_LIMIT`).
 */
export class JournalTally {
  private readonly bytes = new Map<number, number>();

  constructor(
    rows: readonly Pick<StepRecord, 'position' | 'valueBytes'>[],
    private readonly limits: Pick<TaskLimits, 'maxJournalSteps' | 'maxJournalBytes'>,
  ) {
    for (const row of rows) this.bytes.set(row.position, row.valueBytes);
  }

  /** The error of a step at `position` when the journal holds its rows already without one there; null when it fits. */
  rowRefusal(position: number, name: string): StepError | null {
    const most = this.limits.maxJournalSteps;
    if (most === null || this.bytes.has(position) || this.bytes.size < most) return null;
    return { message: journalStepsMessage(name, most) };
  }

  /** The error of a value of `valueBytes` at `position` that would take the journal's values past their bound; null when it fits. */
  bytesRefusal(position: number, name: string, valueBytes: number): StepError | null {
    const most = this.limits.maxJournalBytes;
    // A step with no value adds nothing (as the store's rule says).
    if (most === null || valueBytes === 0) return null;
    let others = 0;
    for (const [at, bytes] of this.bytes) if (at !== position) others += bytes;
    return others + valueBytes > most ? { message: journalBytesMessage(name, valueBytes, others, most) } : null;
  }

  /** A row the run has written. */
  wrote(position: number, valueBytes: number): void {
    this.bytes.set(position, valueBytes);
  }
}
