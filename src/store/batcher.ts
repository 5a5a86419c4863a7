/**
 * Gather-then-flush, once for every batch the stores send: members join a queue; a flush takes
 * the oldest of them, up to a bound, when the schedule says the batch is due; at most `inFlight`
 * flushes are out at once, and the members that arrive meanwhile wait for the next. The flush is
 * the owner's (its SQL, and how its result settles each member); the batcher decides when, how
 * many, and what a failed flush means for its members.
 *
 * Members of a batch do not share fate: a flush that fails with an error `isMemberError` blames
 * on one member's data is sent again for each member alone, so only the guilty one fails; any
 * other error (an outage) fails the batch as a whole, through `fail`.
 */

/** What waits: the batcher takes the oldest members, `most` at a time. */
export interface BatchQueue<Member> {
  readonly size: number;
  push(member: Member): void;
  /** The oldest members, at most `most` (at least one when any waits), off the queue. */
  take(most: number): Member[];
}

/**
 * When a batch is due, once a flush slot is free:
 * - `once`: as soon as a member joins (and, when a flush ends, with what waited);
 * - `turns`: at the end of the turn of the event loop the first member joined, then `turns` more
 *   turns, but no later than `maxMs` after the gathering began; a flush that ends begins the next
 *   gathering at once (the members that waited for it gather `turns` turns more);
 * - `timer`: `ms` after the first member joined (`ms` 0: the end of its turn), and again after a
 *   flush that ends with members waiting.
 * Whatever the schedule, a batch is due once `maxBatch` members wait, or while `drain` waits.
 */
export type BatchSchedule =
  { readonly at: 'once' } | { readonly at: 'turns'; readonly turns: number; readonly maxMs?: number } | { readonly at: 'timer'; readonly ms: number };

export interface BatcherOptions<Member> {
  schedule: BatchSchedule;
  /**
   * Sends one batch and settles each of its members from the result (synchronously, or before the
   * promise it returns settles). Throwing or rejecting is the batch failing as a whole.
   */
  flush(batch: Member[]): void | Promise<void>;
  /** A batch failed as a whole: settles its members (a promise holds the flush's slot until it settles). */
  fail(batch: Member[], error: unknown): void | Promise<void>;
  /** Whether a batch's error is one member's: each member is then flushed again alone. */
  isMemberError?: (error: unknown) => boolean;
  /** Flushes out at once (default 1). */
  inFlight?: number;
  /** Most members in one batch (default no bound). */
  maxBatch?: number;
}

/** Members in the order they joined; `weigh` and `maxWeight` bound a batch's total (one member always goes). */
export class MemberQueue<Member> implements BatchQueue<Member> {
  private members: Member[] = [];

  constructor(
    private readonly weigh: ((member: Member) => number) | null = null,
    private readonly maxWeight = Infinity,
  ) {}

  get size(): number {
    return this.members.length;
  }

  push(member: Member): void {
    this.members.push(member);
  }

  take(most: number): Member[] {
    let n = Math.min(most, this.members.length);
    if (this.weigh !== null) {
      let weight = 0;
      for (let i = 0; i < n; i++) {
        weight += this.weigh(this.members[i] as Member);
        if (i > 0 && weight > this.maxWeight) n = i;
      }
    }
    // The whole queue, as it is, when it fits: no copy.
    if (n === this.members.length) {
      const all = this.members;
      this.members = [];
      return all;
    }
    return this.members.splice(0, n);
  }
}

/** Members by key, the oldest key first: its owner adds to a member of a queued key in place. */
export class KeyedQueue<Member> extends Map<string, Member> implements BatchQueue<Member> {
  constructor(private readonly keyOf: (member: Member) => string) {
    super();
  }

  push(member: Member): void {
    this.set(this.keyOf(member), member);
  }

  take(most: number): Member[] {
    const batch: Member[] = [];
    for (const [key, member] of this) {
      if (batch.length >= most) break;
      batch.push(member);
      this.delete(key);
    }
    return batch;
  }
}

/** One queue of members and the flushes that empty it (see the top of this file). */
export class Batcher<Member, Queue extends BatchQueue<Member> = MemberQueue<Member>> {
  private readonly inFlight: number;
  private readonly maxBatch: number;
  /** Flushes out now. */
  private out = 0;
  /** The pending end of a gathering (an immediate or a timer), if any. */
  private wakeUp: NodeJS.Immediate | NodeJS.Timeout | null = null;
  /** Turns the next batch has waited so far (`turns`), since `gatherStart` (`performance.now()`). */
  private gathered = 0;
  private gatherStart = 0;
  /** Callers of `drain` waiting: no batch gathers meanwhile. */
  private draining = 0;
  private idle: Array<() => void> = [];
  private readonly woken = (): void => {
    this.wakeUp = null;
    this.check(true);
  };
  private readonly ended = (): void => {
    this.out -= 1;
    this.check(false);
    this.settleIdle();
  };

  constructor(
    private readonly options: BatcherOptions<Member>,
    /** What waits (the owner may add to a queued member in place, then `wake`). */
    readonly queue: Queue,
  ) {
    this.inFlight = Math.max(1, options.inFlight ?? 1);
    this.maxBatch = Math.max(1, options.maxBatch ?? Infinity);
  }

  /** Members waiting, not yet in a flush. */
  get waiting(): number {
    return this.queue.size;
  }

  /** Whether a member waits or a flush is out. */
  get busy(): boolean {
    return this.out > 0 || this.queue.size > 0;
  }

  /** Queues `member` for a coming batch. */
  add(member: Member): void {
    this.queue.push(member);
    this.wake();
  }

  /** A member joined the queue (through `add`, or put there by its owner): a batch will take it. */
  wake(): void {
    if (this.options.schedule.at === 'once' || this.draining > 0) this.check(false);
    else if (this.wakeUp === null && this.out < this.inFlight) this.arm();
  }

  /** Flushes what waits now, whatever the schedule (as far as the in-flight bound allows). */
  flushNow(): void {
    this.disarm();
    this.gathered = 0;
    this.pump();
  }

  /**
   * Resolves once nothing waits and no flush is out, or after `timeoutMs`; meanwhile nothing
   * gathers (each batch goes as soon as a slot is free).
   */
  async drain(timeoutMs = Infinity): Promise<void> {
    this.draining += 1;
    try {
      this.flushNow();
      if (this.out === 0 && this.queue.size === 0) return;
      const idle = new Promise<void>((resolve) => this.idle.push(resolve));
      if (!Number.isFinite(timeoutMs)) return await idle;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([idle, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    } finally {
      this.draining -= 1;
    }
  }

  /** At the end of a gathering (`fired`) or of a flush: the batch goes if due, else gathers on. */
  private check(fired: boolean): void {
    if (this.out >= this.inFlight || this.queue.size === 0) return;
    if (!this.due(fired)) {
      this.arm();
      return;
    }
    this.gathered = 0;
    this.pump();
  }

  private due(fired: boolean): boolean {
    if (this.draining > 0 || this.queue.size >= this.maxBatch) return true;
    const schedule = this.options.schedule;
    if (schedule.at === 'once') return true;
    if (schedule.at === 'timer') return fired;
    if (this.gathered >= schedule.turns) return true;
    if (this.gathered === 0) this.gatherStart = performance.now();
    else if (schedule.maxMs !== undefined && performance.now() - this.gatherStart >= schedule.maxMs) return true;
    this.gathered += 1;
    return false;
  }

  private arm(): void {
    if (this.wakeUp !== null) return;
    const schedule = this.options.schedule;
    this.wakeUp = schedule.at === 'timer' && schedule.ms > 0 ? setTimeout(this.woken, schedule.ms) : setImmediate(this.woken);
  }

  private disarm(): void {
    if (this.wakeUp === null) return;
    if (this.options.schedule.at === 'timer' && this.options.schedule.ms > 0) clearTimeout(this.wakeUp as NodeJS.Timeout);
    else clearImmediate(this.wakeUp as NodeJS.Immediate);
    this.wakeUp = null;
  }

  private pump(): void {
    while (this.out < this.inFlight && this.queue.size > 0) {
      const batch = this.queue.take(this.maxBatch);
      this.out += 1;
      let done: void | Promise<void>;
      try {
        done = this.options.flush(batch);
      } catch (error) {
        const settled = this.failed(batch, error);
        if (settled === undefined) this.endedNow();
        else void settled.then(this.ended, this.ended);
        continue;
      }
      // Flushed synchronously: the loop takes what waits next.
      if (done === undefined) this.endedNow();
      // One hop on success: the flush's own promise ends it.
      else
        void done.then(this.ended, (error: unknown) => {
          const settled = this.failed(batch, error);
          if (settled === undefined) this.ended();
          else void settled.then(this.ended, this.ended);
        });
    }
  }

  /** A flush that ended in the loop that sent it. */
  private endedNow(): void {
    this.out -= 1;
    this.settleIdle();
  }

  /** The batch flushed; settled as a whole (`fail`) or, when its error is one member's, member by member. */
  private attempt(batch: Member[]): Promise<void> | undefined {
    let done: void | Promise<void>;
    try {
      done = this.options.flush(batch);
    } catch (error) {
      return this.failed(batch, error);
    }
    return done === undefined ? undefined : done.then(undefined, (error: unknown) => this.failed(batch, error));
  }

  private failed(batch: Member[], error: unknown): Promise<void> | undefined {
    if (batch.length > 1 && this.options.isMemberError?.(error) === true) {
      return Promise.all(batch.map((member) => this.attempt([member]) ?? Promise.resolve())).then(() => undefined);
    }
    try {
      return this.options.fail(batch, error) ?? undefined;
    } catch {
      // A failing `fail` settles nothing more; the slot is freed all the same.
      return undefined;
    }
  }

  private settleIdle(): void {
    if (this.out !== 0 || this.queue.size !== 0 || this.idle.length === 0) return;
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  }
}
