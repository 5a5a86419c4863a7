import type { TaskRecord } from '../core/types.js';

/**
 * The changes seen while a claim is in flight, by task (the highest version, or undefined when
 * a writer did not say), and whether every task may have changed: a claimed task changed in
 * that window (cancelled by a request, say) before its run could watch it, and its run is told.
 */
export class ClaimWindow {
  private readonly tasks = new Map<string, number | undefined>();
  private all = false;

  /** A change of `taskId` at `version` (unknown: undefined); of every task when `taskId` is undefined. */
  note(taskId: string | undefined, version: number | undefined): void {
    if (taskId === undefined) {
      this.all = true;
      return;
    }
    if (!this.tasks.has(taskId)) {
      this.tasks.set(taskId, version);
      return;
    }
    const before = this.tasks.get(taskId);
    // Unknown wins over any version: the run must look.
    this.tasks.set(taskId, before === undefined || version === undefined ? undefined : Math.max(before, version));
  }

  /** Whether anything changed in the window. */
  get any(): boolean {
    return this.all || this.tasks.size > 0;
  }

  /**
   * Tells each new run (`observe`) of the changes its task went through in the window, and says
   * whether anything else changed meanwhile (the claim's own records at the versions it claimed
   * them are no news).
   */
  replay(claimed: readonly TaskRecord[], observe: (taskId: string, version: number | undefined) => void): boolean {
    const versions = new Map(claimed.map((record) => [record.taskId, record.version] as const));
    for (const record of claimed) {
      if (this.all) observe(record.taskId, undefined);
      else if (this.tasks.has(record.taskId)) observe(record.taskId, this.tasks.get(record.taskId));
    }
    return (
      this.all ||
      [...this.tasks].some(([taskId, version]) => {
        const mine = versions.get(taskId);
        return mine === undefined || version === undefined || version > mine;
      })
    );
  }
}
