/** How many tasks' highest delivered progress a process remembers (the oldest touched is forgotten first). */
const REMEMBERED = 10_000;

/**
 * Progress a requestor sees never goes back (MCP: progress MUST increase with each
 * notification). Code of a handler outside its steps runs again after a sleep, a retry's wait or
 * a takeover, and reports the progress it reported before; whichever process holds the
 * requestor hears every report of the task (its own worker's at once, other processes' through
 * the store's feed), so this is where it is held back. Per task, the highest progress delivered;
 * a report that is not greater is dropped (its total and message with it), one that is greater
 * goes on as it was sent. A task's entry is forgotten when the task ends, when nobody listens,
 * and past `REMEMBERED` tasks (the one least recently reported first).
 */
export class ProgressGate {
  private readonly highest = new Map<string, number>();

  constructor(private readonly remembered = REMEMBERED) {}

  /** Whether a report of `progress` for `taskId` goes on to the requestor; it is remembered when it does. */
  admit(taskId: string, progress: number): boolean {
    const last = this.highest.get(taskId);
    if (last !== undefined && !(progress > last)) return false;
    // A value that is not a number cannot be compared later; it goes on and is not remembered.
    if (Number.isNaN(progress)) return true;
    this.highest.delete(taskId);
    this.highest.set(taskId, progress);
    if (this.highest.size > this.remembered) {
      const oldest = this.highest.keys().next();
      if (oldest.done !== true) this.highest.delete(oldest.value);
    }
    return true;
  }

  /** The task ended: nothing more of it is delivered here, so its entry goes. */
  forget(taskId: string): void {
    this.highest.delete(taskId);
  }

  /** Nobody listens any more: every entry goes. */
  clear(): void {
    this.highest.clear();
  }

  /** Tasks remembered. */
  get size(): number {
    return this.highest.size;
  }
}
