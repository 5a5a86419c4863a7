import { setTimeout as sleep } from 'node:timers/promises';
import { coerceError } from '../core/errors.js';
import type { StoredInput } from '../core/input-rules.js';
import type { JournalEntry, StepRecord } from '../core/step-rules.js';
import type { StepPort, StepRun } from './step-run.js';
import { JournalTally } from './journal-tally.js';
import { retryPause } from './unknown-write.js';

/**
 * The journal as one run found it, and what the run has done with it since: the rows by name
 * (steps and sleeps) and by id (patch markers), the stored questions, the journal's size, which
 * entries the handler has reached, and the next position a fresh entry takes (after every
 * recorded one: a fresh row never meets a recorded row at its position, whatever order the
 * handler reaches things in). Values stay as the store handed them (parsed when first read).
 */
export class RunJournal {
  readonly named: Map<string, StepRecord>;
  readonly markers: Map<string, StepRecord>;
  readonly tally: JournalTally;
  private next: number;

  constructor(
    steps: readonly StepRecord[],
    readonly inputs: readonly StoredInput[],
    limits: ConstructorParameters<typeof JournalTally>[1],
  ) {
    this.named = new Map(steps.filter((s) => s.kind !== 'patch').map((s) => [s.name, s]));
    this.markers = new Map(steps.filter((s) => s.kind === 'patch').map((s) => [s.name, s]));
    this.tally = new JournalTally(steps, limits);
    let highest = -1;
    for (const s of steps) highest = Math.max(highest, s.position);
    for (const q of inputs) if (q.position !== undefined) highest = Math.max(highest, q.position);
    this.next = highest + 1;
  }

  /** The position of a fresh entry (a step, sleep, marker or ask the journal does not hold). */
  fresh(): number {
    return this.next++;
  }

  /**
   * The journal's entries the run has not reached (`reached`: the step names and ask sequence
   * numbers it has), as the order check reads them; a stored ask is one entry at its position.
   */
  unreached(reached: { names: ReadonlySet<string>; asks: ReadonlySet<number> }): JournalEntry[] {
    const entries: JournalEntry[] = [];
    for (const row of this.named.values()) {
      if (!reached.names.has(row.name)) entries.push({ position: row.position, kind: row.kind, name: row.name, concurrent: row.concurrent });
    }
    const asks = new Map<number, { position: number; keys: string[] }>();
    for (const q of this.inputs) {
      if (q.position === undefined || reached.asks.has(q.askSeq)) continue;
      const ask = asks.get(q.askSeq) ?? { position: q.position, keys: [] };
      ask.keys.push(q.key);
      asks.set(q.askSeq, ask);
    }
    for (const ask of asks.values()) entries.push({ position: ask.position, kind: 'ask', name: ask.keys.join(','), concurrent: false });
    return entries;
  }
}

/**
 * Which steps of a run are in flight (called, and neither recorded nor returned to the handler
 * yet), and whether each has been concurrent: it was called while another was in flight, or
 * another was called while it was. A step's flag is taken (and the step leaves the set) when its
 * row is written, so that two steps overlap for both or for neither: a step called after another's
 * row went out does not mark that row, whose flag the store already has.
 */
export class InFlight {
  private readonly steps = new Map<string, { concurrent: boolean }>();

  /** A step called: concurrent with every step in flight. */
  called(name: string): void {
    const concurrent = this.steps.size > 0;
    for (const other of this.steps.values()) other.concurrent = true;
    this.steps.set(name, { concurrent });
  }

  /** Whether any step is in flight now (a patch gate's marker says so). */
  any(): boolean {
    return this.steps.size > 0;
  }

  /** The step's flag as its row records it; the step is no longer in flight. */
  take(name: string): boolean {
    const flag = this.steps.get(name)?.concurrent ?? false;
    this.steps.delete(name);
    return flag;
  }
}

/**
 * Whether the handler is still moving on its own: calls (steps, gates, asks) are counted as they
 * come and as their replays settle, and a call still replaying (reached, its row recorded, not yet
 * returned nor running the step's function) is under way. The order check waits while it moves.
 */
export class Moving {
  private moves = 0;
  private replaying = 0;

  /** A call that replays on its own until its `settle` (called once, or more: only the first counts). */
  begin(): () => void {
    this.replaying++;
    this.moves++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.replaying--;
      this.moves++;
    };
  }

  /** After a turn of the event loop: whether something was called or settled meanwhile, or a replay is still under way. */
  async moved(): Promise<boolean> {
    const before = this.moves;
    await new Promise<void>((resolve) => setImmediate(resolve));
    return this.moves !== before || this.replaying > 0;
  }
}

/**
 * Reads the journal and the stored questions. A read that fails is tried again while the lease
 * holds (a store that does not answer must not fail the task); past it the run stops without a
 * write, and a later attempt reads again.
 */
export async function readJournal(run: StepRun, port: StepPort): Promise<RunJournal> {
  const { authKey } = run.record;
  for (let retry = 0; ; retry++) {
    try {
      const [steps, inputs] = await Promise.all([port.lookupSteps({ auth: authKey, taskId: run.taskId }), run.storedInputs()]);
      return new RunJournal(steps, inputs, port.limits);
    } catch (error) {
      const pause = retryPause(retry, port.now(), run.leaseUntil);
      if (pause === null) run.stop('lease lost');
      run.signal.throwIfAborted();
      run.logger.emit('step:journalRetry', { err: coerceError(error), retry });
      await sleep(pause!, undefined, { signal: run.signal });
    }
  }
}
