import type { Millis } from '../../core/types.js';
import { boundedAuditLine } from '../audit-line.js';
import { mergeReadAudit, mergeTrail, readAuditEntry, readAuditKey, readAuditRow, rowConcerns, type ReadAuditRow } from '../read-audit.js';
import { ABANDONED_DETAIL, type AuditTally } from '../task-operations.js';
import type { AuditEntry } from '../types.js';

/**
 * The memory store's audit trail, as the SQL stores keep it: exact lines numbered like their
 * ids (`task_audit`), and the aggregated rows of decisions made outside a write
 * (`task_read_audit`, see read-audit.ts).
 */
export class MemoryAudit {
  private lines: Array<{ id: number; line: AuditEntry }> = [];
  private lastId = 0;
  private readonly reads = new Map<string, ReadAuditRow>();

  /** An exact line, written with a store write. */
  append(line: AuditEntry): void {
    this.lines.push({ id: ++this.lastId, line });
  }

  /** A decision made outside a write: added to its row. */
  count(entry: AuditEntry): void {
    const row = readAuditRow(boundedAuditLine(entry));
    const key = readAuditKey(row);
    const held = this.reads.get(key);
    this.reads.set(key, held === undefined ? row : mergeReadAudit(held, row));
  }

  trail(taskId: string): AuditEntry[] {
    const lines = this.lines.filter((l) => l.line.taskId === taskId).map((l) => ({ ...l.line }));
    const rows = [...this.reads.values()]
      .filter((row) => rowConcerns(row, taskId))
      .sort((a, b) => a.firstAt - b.firstAt || a.windowStart - b.windowStart)
      .map(readAuditEntry);
    return mergeTrail(lines, rows);
  }

  /** Positions are line ids, as the SQL stores' are: removing lines never renumbers the rest. */
  tally(after: number | null): AuditTally {
    const position = this.lastId;
    if (after === null) return { position, abandoned: 0 };
    return { position, abandoned: this.lines.filter((l) => l.id > after && l.line.detail === ABANDONED_DETAIL).length };
  }

  /** Removes a task's lines and rows; returns how many. */
  removeTask(taskId: string): number {
    const before = this.lines.length;
    this.lines = this.lines.filter((l) => l.line.taskId !== taskId);
    let removed = before - this.lines.length;
    for (const [key, row] of this.reads) {
      if (row.taskKey === taskId) {
        this.reads.delete(key);
        removed++;
      }
    }
    return removed;
  }

  /** How many lines and rows `removeTask` of each of `taskIds` and `removeOrphans` without a bound would remove. */
  due(taskIds: ReadonlySet<string>, cutoff: Millis, isStored: (taskId: string) => boolean): number {
    const orphanLine = (l: AuditEntry) => l.at <= cutoff && (l.taskId === null || !isStored(l.taskId));
    const lines = this.lines.filter(({ line }) => (line.taskId !== null && taskIds.has(line.taskId)) || orphanLine(line)).length;
    const reads = [...this.reads.values()].filter(
      (row) => taskIds.has(row.taskKey) || (row.lastAt <= cutoff && (row.taskKey === '' || !isStored(row.taskKey))),
    ).length;
    return lines + reads;
  }

  /** Up to `limit` lines and `limit` rows older than `cutoff` whose task is not stored (or that named none). */
  removeOrphans(cutoff: Millis, limit: number, isStored: (taskId: string) => boolean): { lines: number; reads: number } {
    let lines = 0;
    this.lines = this.lines.filter((l) => {
      const orphan = lines < limit && l.line.at <= cutoff && (l.line.taskId === null || !isStored(l.line.taskId));
      if (orphan) lines++;
      return !orphan;
    });
    let reads = 0;
    for (const [key, row] of this.reads) {
      if (reads >= limit) break;
      if (row.lastAt <= cutoff && (row.taskKey === '' || !isStored(row.taskKey))) {
        this.reads.delete(key);
        reads++;
      }
    }
    return { lines, reads };
  }
}
