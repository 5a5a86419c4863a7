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
   * Tells each new run (`observe`) of the changes its task went through in the window, and
   * returns what else changed meanwhile: the tasks (the claim's own records at the versions it
   * claimed them are no news), or `all` when every task may have changed.
   */
  replay(claimed: readonly TaskRecord[], observe: (taskId: string, version: number | undefined) => void): string[] | 'all' {
    const versions = new Map(claimed.map((record) => [record.taskId, record.version] as const));
    for (const record of claimed) {
      if (this.all) observe(record.taskId, undefined);
      else if (this.tasks.has(record.taskId)) observe(record.taskId, this.tasks.get(record.taskId));
    }
    if (this.all) return 'all';
    return [...this.tasks]
      .filter(([taskId, version]) => {
        const mine = versions.get(taskId);
        return mine === undefined || version === undefined || version > mine;
      })
      .map(([taskId]) => taskId);
  }
}

/** Tasks named past this many are forgotten for a look at every task: the set stays small. */
const MOST_OWED = 1024;

/**
 * What a worker owes the outbox a look for: the tasks change events named (each may have come
 * due, so a look claims at most one slot per task named), or every task (the start, the poll, a
 * claim that filled its limit, a failed claim, a change that named no task), when a look claims
 * every free slot. The slots an owed look will claim are not held for admissions.
 */
export class OwedLook {
  private all = false;
  private readonly tasks = new Set<string>();

  get any(): boolean {
    return this.all || this.tasks.size > 0;
  }

  /** How many of `free` slots the owed look claims. */
  limit(free: number): number {
    return this.all ? free : Math.min(free, this.tasks.size);
  }

  task(taskId: string): void {
    if (this.all) return;
    this.tasks.add(taskId);
    if (this.tasks.size > MOST_OWED) this.every();
  }

  /**
   * Starts a look with `free` slots: its limit, and what it was owed for (the tasks named, or
   * `all`); nothing is owed after it until news comes.
   */
  take(free: number): { limit: number; named: readonly string[] | 'all' } {
    const look = { limit: this.limit(free), named: this.all ? ('all' as const) : [...this.tasks] };
    this.clear();
    return look;
  }

  /**
   * What a look that claimed `claimed` with `free` slots leaves owed. One that filled every free
   * slot, or its limit when every task may have been due, may have left due tasks behind: every
   * task is owed a look. One that filled a limit of named tasks may have claimed older due tasks
   * in their place: the named tasks it did not claim stay owed. One short of its limit claimed
   * whatever was due.
   */
  after(look: { limit: number; named: readonly string[] | 'all' }, free: number, claimed: ReadonlySet<string>): void {
    if (claimed.size < look.limit) return;
    if (look.named === 'all' || look.limit === free) this.every();
    else for (const taskId of look.named) if (!claimed.has(taskId)) this.task(taskId);
  }

  every(): void {
    this.all = true;
    this.tasks.clear();
  }

  clear(): void {
    this.all = false;
    this.tasks.clear();
  }
}
