/**
 * What is asked for in one turn of the event loop, handed over together at its end: the first
 * item of a turn schedules the hand-over (`setImmediate`), later ones join it. `drain` hands
 * over what waits at once (a store closing). The SQLite store's reads and admissions gather
 * here (`ReadBatcher`, `WriteBatcher`).
 */
export class TurnQueue<Item> {
  private items: Item[] = [];
  private turnEnding = false;

  constructor(private readonly handOver: (items: Item[]) => void) {}

  add(item: Item): void {
    this.items.push(item);
    if (!this.turnEnding) {
      this.turnEnding = true;
      setImmediate(() => this.drain());
    }
  }

  /** Hands every waiting item over now (nothing when none waits). */
  drain(): void {
    this.turnEnding = false;
    const items = this.items;
    if (items.length === 0) return;
    this.items = [];
    this.handOver(items);
  }
}
