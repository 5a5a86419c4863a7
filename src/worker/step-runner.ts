import { performance } from 'node:perf_hooks';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import {
  decideFreshEntry,
  decideGateRevision,
  decidePatch,
  decideStepReplay,
  describeAsk,
  describeStep,
  duplicateStepMessage,
  mayRetry,
  retryDelay,
  stepOrderMessage,
  type JournalEntry,
  type StepRecord,
  type StepReplay,
  type StepWrite,
} from '../core/step-rules.js';
import { retryingMessage, sleepingMessage, stepSizeMessage } from '../core/step-value.js';
import type { Millis } from '../core/types.js';
import { ProtocolError } from '../tools/protocol-error.js';
import {
  checkSleepMs,
  checkStepName,
  doArguments,
  recordableValue,
  runStepAttempt,
  StepFailedError,
  stepErrorOf,
  wakeTimeOf,
  type Step,
  type StepConfig,
  type StepFunction,
  type WaitForEventOptions,
  valueSteps,
} from '../tools/step.js';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { endStep, stepSpan, within } from '../trace/run-spans.js';
import type { StepPort, StepRun } from './step-run.js';
import { InFlight, Moving, readJournal, type RunJournal } from './step-journal.js';
import { StepWriter, wokeRow } from './step-writes.js';
import { waitForEvent } from './step-events.js';
import { ChildSteps } from './step-children.js';

export type { StepPort, StepRun } from './step-run.js';

/**
 * The durable steps of one run (`ctx.step` in a task). The journal is read once, when the
 * handler first reaches a step, a gate or an ask: the run is the only writer under its fence, so
 * what it read plus what it writes is the journal for the rest of the run.
 *
 * A step or sleep is known by its name: wherever the handler reaches it (first, or in a branch
 * after another branch's await), the core's `decideStepReplay` says from its row whether to
 * return the recorded value, throw the recorded failure, run the function, or wait; a fresh one
 * (its name not in the journal) takes the next position after every recorded one, once the order
 * check (`decideFreshEntry`) finds no entry of the journal that the handler went on to without
 * it. Each row says whether its step was concurrent with another (`InFlight`), and the check
 * skips those. Before judging a fresh entry against the journal the runner lets the other branches
 * move on while they replay (they reach their recorded steps without waiting for anything), so
 * the verdict does not depend on which branch's await returned first. A run whose handler no
 * longer matches its journal is fatal (`StepRun.fatal`), whatever the handler does with the error.
 */
export class StepRunner {
  private readonly names = new Set<string>();
  private readonly asks = new Set<number>();
  readonly inFlight = new InFlight();
  private readonly gates = new Map<string, Promise<boolean>>();
  /** Gates told `false`, each with the journal's entry it found still ahead (`decideGateRevision`). */
  private readonly skipped: Array<{ id: string; position: number }> = [];
  private revision: Promise<never> | null = null;
  private journal: Promise<RunJournal> | null = null;
  readonly writer: StepWriter;
  readonly moving = new Moving();
  private readonly children = new ChildSteps(this);

  constructor(
    readonly run: StepRun,
    readonly port: StepPort,
    private readonly random: () => number = Math.random,
  ) {
    this.writer = new StepWriter(
      run,
      port,
      () => this.load(),
      (message) => this.fatal(message),
    );
  }

  /** The `ctx.step` a handler of this run is given. */
  api(): Step {
    const { taskId } = this.run;
    return {
      do: <T>(name: string, configOrFn: StepConfig | StepFunction<T>, fn?: StepFunction<T>) => this.do(name, configOrFn, fn),
      sleep: async (name, ms) => {
        const wait = checkSleepMs(name, ms);
        return this.sleepTo(name, (now) => now + wait);
      },
      sleepUntil: async (name, when) => {
        const at = wakeTimeOf(name, when);
        return this.sleepTo(name, () => at);
      },
      idempotencyKey: (name) => {
        checkStepName(name);
        return `task:${taskId}:step:${name}`;
      },
      patched: async (id) => this.patched(id),
      waitForEvent: async <T>(name: string, options: WaitForEventOptions) => (await waitForEvent(this, name, options)) as T | null,
      runTool: async (name, tool, args, options) => this.children.runTool(name, tool, args, options),
      ...valueSteps(this.do.bind(this), () => this.port.now()),
    };
  }

  /**
   * The position of the run's ask number `askSeq`: where its questions were stored, or, for a
   * fresh ask, the next position once the order check lets it through (it throws the order error
   * otherwise).
   */
  async askPosition(keys: readonly string[], askSeq: number): Promise<number> {
    this.throwIfStopped();
    this.asks.add(askSeq);
    const settle = this.moving.begin();
    try {
      const journal = await this.load();
      this.throwIfStopped();
      const stored = journal.inputs.filter((q) => q.askSeq === askSeq);
      // Questions stored before asks had positions take a fresh one.
      if (stored.length > 0) return stored.find((q) => q.position !== undefined)?.position ?? journal.fresh();
      settle();
      await this.checkFresh(describeAsk(keys));
      return journal.fresh();
    } finally {
      settle();
    }
  }

  private async do<T>(name: string, configOrFn: StepConfig | StepFunction<T>, maybeFn?: StepFunction<T>): Promise<T> {
    const { config, fn } = doArguments(name, configOrFn, maybeFn);
    const settle = this.take(name);
    try {
      const { replay, row } = await this.replay(name, 'do');
      switch (replay.kind) {
        case 'RETURN':
          // The handler has it now: the run keeps no copy (its name is not reached again).
          if (row !== undefined) row.value = undefined;
          return replay.value as T;
        case 'THROW':
          throw new StepFailedError(name, row?.attempts ?? 0, replay.error);
        case 'WAIT':
          return await this.writer.waitAgain(row!, replay.wakeAt, config);
        case 'RUN': {
          settle();
          const position = row?.position ?? (await this.freshPosition(describeStep('do', name)));
          // Past the journal's row bound the step fails before its function runs: nothing is recorded.
          const full = (await this.load()).tally.rowRefusal(position, name);
          if (full !== null) throw new StepFailedError(name, row?.attempts ?? 0, full);
          return await this.attempt(position, name, config, fn, replay.attempt, row);
        }
        default:
          throw this.fatal(stepOrderMessage(row?.position ?? 0, row === undefined ? 'nothing' : describeStep(row.kind, row.name), describeStep('do', name)));
      }
    } finally {
      settle();
      this.inFlight.take(name);
    }
  }

  private async sleepTo(name: string, wakeAtFrom: (now: Millis) => Millis): Promise<void> {
    const settle = this.take(name);
    try {
      const { replay, row } = await this.replay(name, 'sleep');
      if (replay.kind === 'DONE') {
        // The run passes a sleep whose time came: its row says so from now on.
        // Both writes are part of the replay: the order check waits for them (`settle` comes after).
        if (replay.wake) await this.writer.write(wokeRow(row!, this.flag(name, row)));
        return await this.run.passedWait();
      }
      if (replay.kind === 'WAIT') return await this.writer.waitAgain(row!, replay.wakeAt, {});
      if (replay.kind !== 'RUN') throw this.fatal(stepOrderMessage(row?.position ?? 0, 'nothing', describeStep('sleep', name)));
      settle();
      const position = await this.freshPosition(describeStep('sleep', name));
      const full = (await this.load()).tally.rowRefusal(position, name);
      if (full !== null) throw new StepFailedError(name, 0, full);
      const now = this.port.now();
      const wakeAt = wakeAtFrom(now);
      const base = { position, name, kind: 'sleep' as const, attempts: 0, wakeAt, startedAt: now, concurrent: this.flag(name, undefined) };
      const span = stepSpan(this.run.trace, 'sleep', name);
      // A time already past is recorded as passed (the position is the journal's) and not waited for.
      if (wakeAt <= now) {
        await this.writer.write(Object.assign(base, { status: 'woke' as const }));
        return endStep(span, 'passed');
      }
      await this.writer.write(Object.assign(base, { status: 'sleeping' as const }), { wakeAt, statusMessage: sleepingMessage(name, wakeAt) });
      endStep(span, 'sleeping');
      return this.run.suspend(wakeAt);
    } finally {
      settle();
      this.inFlight.take(name);
    }
  }

  /** `ctx.step.patched(id)`: one answer per id and run (a gate tested twice answers the same). */
  private patched(id: string): Promise<boolean> {
    checkStepName(id);
    this.throwIfStopped();
    let gate = this.gates.get(id);
    if (gate === undefined) {
      gate = this.gate(id, this.inFlight.any());
      this.gates.set(id, gate);
    }
    return gate;
  }

  /** A patch gate: its marker replays true; reached fresh its marker is recorded (true); past it the old path (false, nothing recorded). */
  private async gate(id: string, concurrent: boolean): Promise<boolean> {
    const settle = this.moving.begin();
    try {
      const journal = await this.load();
      this.throwIfStopped();
      const marker = journal.markers.get(id);
      settle();
      const decision = decidePatch({ marker, unreached: marker === undefined ? await this.settledUnreached() : [] });
      if (decision.kind === 'SKIP') {
        this.skipped.push({ id, position: decision.position });
        return false;
      }
      if (decision.kind === 'REPLAY') return true;
      const position = journal.fresh();
      const full = journal.tally.rowRefusal(position, id);
      if (full !== null) throw new StepFailedError(id, 0, full);
      await this.writer.write({ position, name: id, kind: 'patch', status: 'completed', attempts: 0, startedAt: this.port.now(), concurrent });
      return true;
    } finally {
      settle();
    }
  }

  /** One attempt of a step's function, and the record of how it went. */
  private async attempt<T>(position: number, name: string, config: StepConfig, fn: StepFunction<T>, attempt: number, row: StepRecord | undefined): Promise<T> {
    const startedAt = row?.startedAt ?? this.port.now();
    const base = (): Omit<StepWrite, 'status'> => ({ position, name, kind: 'do', attempts: attempt, startedAt, concurrent: this.flag(name, row) });
    // A run whose heartbeats could not renew its lease asks the store before a side effect: past
    // the lease the task may be another run's, which may have recorded this step already.
    if (this.port.now() >= this.run.leaseUntil) await this.run.checkpoint();
    const began = performance.now();
    const span = stepSpan(this.run.trace, 'do', name, attempt);
    let value: T;
    try {
      value = await within(span, this.run.trace?.context ?? ROOT_CONTEXT, runStepAttempt, name, fn, attempt, this.run.signal, config.timeoutMs);
    } catch (error) {
      if (this.run.signal.aborted) endStep(span, 'stopped');
      this.run.signal.throwIfAborted();
      const failure = stepErrorOf(error);
      endStep(span, 'threw', error);
      const retries = config.retries;
      if (retries !== undefined && mayRetry(attempt, retries)) {
        this.ran(name, 'retrying', attempt, began);
        const wakeAt = this.port.now() + retryDelay(attempt, retries, this.random);
        // Object.assign, not a spread followed by properties (V8's slow path on Node 20; see `decidedOn`).
        await this.writer.write(Object.assign(base(), { status: 'retrying' as const, error: failure, wakeAt }), {
          wakeAt,
          statusMessage: retryingMessage(name, attempt + 1, retries.limit + 1, wakeAt),
        });
        return this.run.suspend(wakeAt);
      }
      this.ran(name, 'failed', attempt, began);
      return this.writer.failStep(base(), failure);
    }
    endStep(span, 'returned');
    let recorded: { value: unknown; bytes: number };
    try {
      recorded = recordableValue(name, attempt, value);
    } catch (error) {
      if (!(error instanceof StepFailedError)) throw error;
      this.ran(name, 'failed', attempt, began);
      return this.writer.failStep(base(), error.error);
    }
    const most = this.port.limits.maxStepBytes;
    const tooBig = recorded.bytes > most ? { message: stepSizeMessage(name, recorded.bytes, most) } : null;
    const overJournal = tooBig ?? (await this.load()).tally.bytesRefusal(position, name, recorded.bytes);
    if (overJournal !== null) {
      this.ran(name, 'failed', attempt, began);
      return this.writer.failStep(base(), overJournal);
    }
    this.ran(name, 'completed', attempt, began);
    await this.writer.write(Object.assign(base(), { status: 'completed' as const, value: recorded.value }), null, recorded.bytes);
    if (attempt > 1) await this.run.passedWait();
    return recorded.value as T;
  }

  /** A step or sleep of `name` reached (a name used twice in a run is fatal); returns its `settle`. */
  take(name: string): () => void {
    this.throwIfStopped();
    if (this.names.has(name)) throw this.fatal(duplicateStepMessage(name));
    this.names.add(name);
    this.inFlight.called(name);
    return this.moving.begin();
  }

  /** The row flag of `name`'s write: concurrent in this run, or in the run that wrote `row`. */
  flag(name: string, row: Pick<StepRecord, 'concurrent'> | undefined): boolean {
    return this.inFlight.take(name) || (row?.concurrent ?? false);
  }

  throwIfStopped(): void {
    if (this.run.fatal !== null) throw this.run.fatal;
    this.run.signal.throwIfAborted();
  }

  /** What the journal's row of `name` says: the name as another kind is fatal here. */
  async replay(name: string, kind: 'do' | 'sleep' | 'child'): Promise<{ replay: StepReplay; row: StepRecord | undefined }> {
    const journal = await this.load();
    this.throwIfStopped();
    const row = journal.named.get(name);
    const replay = decideStepReplay({ named: row, name, kind, now: this.port.now() });
    if (replay.kind === 'ORDER') throw this.fatal(stepOrderMessage(replay.position, replay.expected, describeStep(kind, name)));
    return { replay, row };
  }

  /** The position of a fresh step or sleep (`actual`, as an order error names it), once the order check lets it run. */
  async freshPosition(actual: string): Promise<number> {
    await this.checkFresh(actual);
    return (await this.load()).fresh();
  }

  /**
   * The order check of a fresh entry: throws the order error when the journal went on without it,
   * unless gates told `false` were wrong about it (`decideGateRevision`): then their markers are
   * recorded and the run stops to run again at once (never returns).
   */
  private async checkFresh(actual: string): Promise<void> {
    const found = decideFreshEntry({ unreached: await this.settledUnreached() });
    if (found.kind === 'FRESH') return;
    const revise = decideGateRevision({ skipped: this.skipped, order: found });
    if (revise.length > 0) {
      this.revision ??= this.reviseGates(revise, found.position);
      return this.revision;
    }
    throw this.fatal(stepOrderMessage(found.position, found.expected, actual));
  }

  /** Records the markers of gates told `false` wrongly, and gives the task back: the next run is told `true`. */
  private async reviseGates(ids: readonly string[], position: number): Promise<never> {
    const journal = await this.load();
    for (const id of ids) {
      await this.writer.write({ position: journal.fresh(), name: id, kind: 'patch', status: 'completed', attempts: 0, startedAt: this.port.now() });
    }
    this.run.logger.emit('step:gatesRevised', { gates: [...ids], position });
    this.run.stop('drained');
    throw this.run.signal.reason as Error;
  }

  /**
   * The journal's unreached entries once the handler has stopped moving on its own: while an
   * entry the check would stop at remains, the runner waits a turn of the event loop as long as
   * some call is still replaying or the last turn saw the handler reach something (a branch that
   * replays reaches its recorded steps in that time, whichever branch's await returned first).
   */
  private async settledUnreached(): Promise<JournalEntry[]> {
    const journal = await this.load();
    for (;;) {
      this.throwIfStopped();
      const unreached = journal.unreached({ names: this.names, asks: this.asks });
      if (decideFreshEntry({ unreached }).kind === 'FRESH') return unreached;
      if (!(await this.moving.moved())) return journal.unreached({ names: this.names, asks: this.asks });
    }
  }

  /** The journal and the stored questions, read once per run (`readJournal`; a failed read is not kept). */
  load(): Promise<RunJournal> {
    this.journal ??= readJournal(this.run, this.port).catch((error: unknown) => {
      this.journal = null;
      throw error;
    });
    return this.journal;
  }

  /** Marks the run fatal with an order error: the run ends with it whatever the handler returns. */
  fatal(message: string): ProtocolError {
    if (this.run.fatal === null) {
      this.run.fatal = new ProtocolError(JSON_RPC_CODES.internalError, message);
      this.run.logger.emit('step:journalBroken', { reason: message });
    }
    return this.run.fatal;
  }

  private ran(step: string, outcome: 'completed' | 'retrying' | 'failed', attempt: number, began: number): void {
    const { taskId, record } = this.run;
    this.port.events.emit('stepRan', { taskId, tool: record.toolName, step, outcome, attempt, durationMs: performance.now() - began });
  }
}
