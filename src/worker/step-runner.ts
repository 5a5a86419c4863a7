import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { coerceError } from '../core/errors.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import type { StoredInput } from '../core/input-rules.js';
import {
  decideStepReplay,
  describeAsk,
  describeStep,
  duplicateStepMessage,
  mayRetry,
  retryDelay,
  stepOrderMessage,
  type StepError,
  type StepKind,
  type StepRecord,
  type StepReplay,
  type StepWrite,
} from '../core/step-rules.js';
import { journalLimitMessage, retryingMessage, sleepingMessage, stepSizeMessage } from '../core/step-value.js';
import type { Millis, TaskRecord } from '../core/types.js';
import type { WorkerPort } from '../service/worker-port.js';
import type { Fence, RecordStepOutcome } from '../store/types.js';
import { JournalTally } from './journal-tally.js';
import type { RunLogger } from './run-events.js';
import { retryPause, writeOfUnknownFate } from './unknown-write.js';
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
  valueSteps,
} from '../tools/step.js';

/** How a write that suspends the task says until when, and why (its status message). */
type Suspension = { wakeAt: Millis; statusMessage: string };

/** What a run's steps need of the worker port: the journal's read and its fenced write, the step limit, the clock, the events. */
export type StepPort = Pick<WorkerPort, 'limits' | 'events' | 'now' | 'recordStep' | 'lookupSteps'>;

/**
 * What a run's steps need of the run that holds the fence (`TaskRun` is the one): its task, its
 * signal, its lease, its write chain, its stored questions, and the ways it stops.
 */
export interface StepRun {
  readonly record: TaskRecord;
  readonly taskId: string;
  readonly signal: AbortSignal;
  /** The fence's version: a suspending write moves it on. */
  version: number;
  readonly leaseUntil: number;
  /** Set when the handler broke its journal: the task ends failed with it. */
  fatal: ProtocolError | null;
  /** The run's logger (its worker, task and attempt bound). */
  readonly logger: RunLogger;
  fence(): Fence;
  stop(reason: 'cancelled' | 'expired' | 'lease lost'): void;
  serial<T>(work: () => Promise<T>): Promise<T>;
  checkpoint(): Promise<void>;
  storedInputs(): Promise<StoredInput[]>;
  /** The handler passed a wait (a woken sleep, a retried step's last attempt): the wait's status message goes. */
  passedWait(): Promise<void>;
  /** Stops the handler while the task waits (until `wakeAt`, when given); never returns. */
  suspend(wakeAt?: number): never;
}

/**
 * The journal as this run found it: steps by position and by name (each value parsed when the
 * handler reaches it: the store hands rows over with their JSON text), the task's stored
 * questions, and the journal's size as this run has left it.
 */
interface Journal {
  at: Map<number, StepRecord>;
  named: Map<string, StepRecord>;
  inputs: StoredInput[];
  tally: JournalTally;
}

/**
 * The durable steps of one run (`ctx.step` in a task). The journal is read once, when the
 * handler first reaches a step or an ask: the run is the only writer under its fence, so what it
 * read plus what it writes is the journal for the rest of the run. Steps, sleeps and asks take
 * positions in the order the handler reaches them (0, 1, …); at each position the core's
 * `decideStepReplay` says whether to return the recorded value, throw the recorded failure, run
 * the function, or wait. Every write goes through the run's write chain with its fence. A run
 * that reaches something other than what the journal holds is fatal (`TaskRun.fatal`): the task
 * ends failed with the order error whatever the handler does with it.
 */
export class StepRunner {
  private next = 0;
  private readonly names = new Set<string>();
  private journal: Promise<Journal> | null = null;

  constructor(
    private readonly run: StepRun,
    private readonly port: StepPort,
    private readonly random: () => number = Math.random,
  ) {}

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
      ...valueSteps(this.do.bind(this), () => this.port.now()),
    };
  }

  /**
   * The position of the run's next ask (taken at once, before any await: positions follow the
   * order of calls). Throws the order error when the journal holds a step there, or stored this
   * ask at another position.
   */
  async askPosition(keys: readonly string[], askSeq: number): Promise<number> {
    this.throwIfStopped();
    const position = this.next++;
    const journal = await this.load();
    const row = journal.at.get(position);
    if (row !== undefined) throw this.fatal(stepOrderMessage(position, describeStep(row.kind, row.name), describeAsk(keys)));
    const stored = journal.inputs.filter((q) => q.askSeq === askSeq);
    // Questions stored before asks had positions say nothing here.
    const storedAt = stored.find((q) => q.position !== undefined)?.position;
    if (storedAt !== undefined && storedAt !== position) {
      throw this.fatal(stepOrderMessage(position, `${describeAsk(stored.map((q) => q.key))} at position ${storedAt}`, describeAsk(keys)));
    }
    return position;
  }

  private async do<T>(name: string, configOrFn: StepConfig | StepFunction<T>, maybeFn?: StepFunction<T>): Promise<T> {
    const { config, fn } = doArguments(name, configOrFn, maybeFn);
    const position = this.take(name);
    const { replay, row } = await this.replay(position, name, 'do');
    switch (replay.kind) {
      case 'RETURN':
        // The handler has it now: the run keeps no copy (its position is not reached again).
        if (row !== undefined) row.value = undefined;
        return replay.value as T;
      case 'THROW':
        throw new StepFailedError(name, row?.attempts ?? 0, replay.error);
      case 'WAIT':
        return this.waitAgain(row!, replay.wakeAt, config);
      case 'RUN': {
        // Past the journal's row bound the step fails before its function runs: nothing is recorded.
        const full = (await this.load()).tally.rowRefusal(position, name);
        if (full !== null) throw new StepFailedError(name, row?.attempts ?? 0, full);
        return this.attempt(position, name, config, fn, replay.attempt, row?.startedAt);
      }
      default:
        throw this.fatal(stepOrderMessage(position, row === undefined ? 'nothing' : describeStep(row.kind, row.name), describeStep('do', name)));
    }
  }

  private async sleepTo(name: string, wakeAtFrom: (now: Millis) => Millis): Promise<void> {
    const position = this.take(name);
    const { replay, row } = await this.replay(position, name, 'sleep');
    if (replay.kind === 'DONE') return this.run.passedWait();
    if (replay.kind === 'WAIT') return this.waitAgain(row!, replay.wakeAt, {});
    if (replay.kind !== 'RUN')
      throw this.fatal(stepOrderMessage(position, row === undefined ? 'nothing' : describeStep(row.kind, row.name), describeStep('sleep', name)));
    const full = (await this.load()).tally.rowRefusal(position, name);
    if (full !== null) throw new StepFailedError(name, 0, full);
    const now = this.port.now();
    const wakeAt = wakeAtFrom(now);
    const step: StepWrite = { position, name, kind: 'sleep', status: 'sleeping', attempts: 0, wakeAt, startedAt: now };
    // A time already past is recorded (the position is the journal's) and not waited for.
    if (wakeAt <= now) return this.write(step);
    await this.write(step, { wakeAt, statusMessage: sleepingMessage(name, wakeAt) });
    return this.run.suspend(wakeAt);
  }

  /** One attempt of a step's function, and the record of how it went. */
  private async attempt<T>(position: number, name: string, config: StepConfig, fn: StepFunction<T>, attempt: number, startedAt?: Millis): Promise<T> {
    const base = { position, name, kind: 'do' as const, attempts: attempt, startedAt: startedAt ?? this.port.now() };
    // A run whose heartbeats could not renew its lease asks the store before a side effect: past
    // the lease the task may be another run's, which may have recorded this step already.
    if (this.port.now() >= this.run.leaseUntil) await this.run.checkpoint();
    const began = performance.now();
    let value: T;
    try {
      value = await runStepAttempt(name, fn, attempt, this.run.signal, config.timeoutMs);
    } catch (error) {
      this.run.signal.throwIfAborted();
      const failure = stepErrorOf(error);
      const retries = config.retries;
      if (retries !== undefined && mayRetry(attempt, retries)) {
        this.ran(name, 'retrying', attempt, began);
        const wakeAt = this.port.now() + retryDelay(attempt, retries, this.random);
        // Object.assign, not a spread followed by properties (V8's slow path on Node 20; see `decidedOn`).
        await this.write(Object.assign({}, base, { status: 'retrying' as const, error: failure, wakeAt }), {
          wakeAt,
          statusMessage: retryingMessage(name, attempt + 1, retries.limit + 1, wakeAt),
        });
        return this.run.suspend(wakeAt);
      }
      this.ran(name, 'failed', attempt, began);
      return this.failStep(base, failure);
    }
    let recorded: { value: unknown; bytes: number };
    try {
      recorded = recordableValue(name, attempt, value);
    } catch (error) {
      if (!(error instanceof StepFailedError)) throw error;
      this.ran(name, 'failed', attempt, began);
      return this.failStep(base, error.error);
    }
    const most = this.port.limits.maxStepBytes;
    const tooBig = recorded.bytes > most ? { message: stepSizeMessage(name, recorded.bytes, most) } : null;
    const overJournal = tooBig ?? (await this.load()).tally.bytesRefusal(position, name, recorded.bytes);
    if (overJournal !== null) {
      this.ran(name, 'failed', attempt, began);
      return this.failStep(base, overJournal);
    }
    this.ran(name, 'completed', attempt, began);
    await this.write(Object.assign({}, base, { status: 'completed' as const, value: recorded.value }), null, recorded.bytes);
    if (attempt > 1) await this.run.passedWait();
    return recorded.value as T;
  }

  /** Records a final failure and throws it into the handler. */
  private async failStep(base: Omit<StepWrite, 'status'>, error: StepError): Promise<never> {
    await this.write(Object.assign({}, base, { status: 'failed' as const, error }));
    if (base.attempts > 1) await this.run.passedWait();
    throw new StepFailedError(base.name, base.attempts, error);
  }

  /**
   * A sleep or a retry claimed before its time (a skewed clock, a manual release): suspended
   * again until the same wake time, with the same row, so the outbox entry is due then again.
   */
  private async waitAgain(row: StepRecord, wakeAt: Millis, config: StepConfig): Promise<never> {
    const { position, name, kind, status, attempts, error, startedAt } = row;
    const statusMessage =
      kind === 'sleep' ? sleepingMessage(name, wakeAt) : retryingMessage(name, attempts + 1, Math.max(attempts, config.retries?.limit ?? 0) + 1, wakeAt);
    await this.write({ position, name, kind, status, attempts, error, wakeAt, startedAt }, { wakeAt, statusMessage });
    return this.run.suspend(wakeAt);
  }

  /** Takes the next position for a step or sleep of `name` (a name used twice in a run is fatal). */
  private take(name: string): number {
    this.throwIfStopped();
    if (this.names.has(name)) throw this.fatal(duplicateStepMessage(name));
    this.names.add(name);
    return this.next++;
  }

  private throwIfStopped(): void {
    if (this.run.fatal !== null) throw this.run.fatal;
    this.run.signal.throwIfAborted();
  }

  /** What the journal says about `name` at `position`: an order change is fatal here. */
  private async replay(position: number, name: string, kind: StepKind): Promise<{ replay: StepReplay; row: StepRecord | undefined }> {
    const journal = await this.load();
    this.throwIfStopped();
    const row = journal.at.get(position);
    const named = journal.named.get(name);
    const actual = describeStep(kind, name);
    if (row === undefined && named !== undefined && named.position !== position) {
      throw this.fatal(stepOrderMessage(position, `${describeStep(named.kind, name)} at position ${named.position}`, actual));
    }
    const asked = journal.inputs.filter((q) => q.position === position).map((q) => q.key);
    const replay = decideStepReplay({ journalAt: row, askAt: asked.length > 0 ? { keys: asked } : undefined, name, kind, now: this.port.now() });
    if (replay.kind === 'ORDER') throw this.fatal(stepOrderMessage(position, replay.expected, actual));
    return { replay, row };
  }

  /**
   * The journal and the stored questions, read once per run. A read that fails is tried again
   * while the lease holds (a store that does not answer must not fail the task); past it the run
   * stops without a write, and a later attempt reads again.
   */
  private load(): Promise<Journal> {
    this.journal ??= this.read().catch((error: unknown) => {
      this.journal = null;
      throw error;
    });
    return this.journal;
  }

  private async read(): Promise<Journal> {
    const { authKey } = this.run.record;
    for (let retry = 0; ; retry++) {
      try {
        const [steps, inputs] = await Promise.all([this.port.lookupSteps({ auth: authKey, taskId: this.run.taskId }), this.run.storedInputs()]);
        const tally = new JournalTally(steps, this.port.limits);
        return { at: new Map(steps.map((s) => [s.position, s])), named: new Map(steps.map((s) => [s.name, s])), inputs, tally };
      } catch (error) {
        const pause = retryPause(retry, this.port.now(), this.run.leaseUntil);
        if (pause === null) this.run.stop('lease lost');
        this.run.signal.throwIfAborted();
        this.run.logger.emit('step:journalRetry', { err: coerceError(error), retry });
        await sleep(pause!, undefined, { signal: this.run.signal });
      }
    }
  }

  /** Marks the run fatal with an order error: the task ends failed with it whatever the handler returns. */
  private fatal(message: string): ProtocolError {
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

  /**
   * One fenced write of the journal. A refusal stops the run as any refused write of it does
   * (a stale fence: the lease is lost; a terminal task: cancelled). A write whose fate is unknown
   * (the store did not answer) is looked for in the journal, and written again only if it is not
   * there, while the lease holds (`writeOfUnknownFate`).
   */
  private async write(step: StepWrite, suspend: Suspension | null = null, valueBytes = 0): Promise<void> {
    const written = await writeOfUnknownFate<RecordStepOutcome>({
      what: 'step',
      step: step.name,
      attempt: () => this.run.serial(() => this.port.recordStep({ fence: this.run.fence(), step, suspend })),
      stored: async () => ((await this.landed(step)) ? { decision: 'APPLY_STEP', record: null } : null),
      now: () => this.port.now(),
      leaseUntil: () => this.run.leaseUntil,
      signal: this.run.signal,
      logger: this.run.logger,
    });
    if (written === 'lease out') {
      // Past the lease the task is another run's: this one stops.
      this.run.stop('lease lost');
      throw this.run.signal.reason as Error;
    }
    const out = written.outcome;
    if (out.decision === 'APPLY_STEP') (await this.load()).tally.wrote(step.position, valueBytes);
    return this.outcome(step, suspend, out);
  }

  private outcome(step: StepWrite, suspend: Suspension | null, out: RecordStepOutcome): void {
    switch (out.decision) {
      case 'APPLY_STEP':
        if (suspend !== null && out.record !== null) this.run.version = Math.max(this.run.version, out.record.version);
        return;
      case 'BLOCK_STALE_VERSION':
        this.run.stop('lease lost');
        break;
      case 'BLOCK_TERMINAL_REWRITE':
        this.run.stop('cancelled');
        break;
      case 'BLOCK_STEP_ORDER':
        throw this.fatal(stepOrderMessage(step.position, 'another entry', describeStep(step.kind, step.name)));
      case 'BLOCK_STEP_SIZE':
        // Checked before the write with the same bound; a store with a smaller one still fails the step.
        throw new StepFailedError(step.name, step.attempts, { message: `step ${JSON.stringify(step.name)} returned more than the store keeps` });
      case 'BLOCK_JOURNAL_LIMIT': {
        // Checked before the write with the same bounds; nothing was recorded.
        const { maxJournalSteps, maxJournalBytes } = this.port.limits;
        throw new StepFailedError(step.name, step.attempts, { message: journalLimitMessage(step.name, maxJournalSteps, maxJournalBytes) });
      }
      default:
        this.run.stop('expired');
    }
    this.run.signal.throwIfAborted();
    throw new Error(`step not recorded: ${out.decision}`);
  }

  /** After a write of unknown fate: whether the journal holds it now (a failed read throws). */
  private async landed(step: StepWrite): Promise<boolean> {
    const rows = await this.port.lookupSteps({ auth: this.run.record.authKey, taskId: this.run.taskId });
    const row = rows.find((r) => r.position === step.position);
    return row !== undefined && row.name === step.name && row.status === step.status && row.attempts === step.attempts && row.wakeAt === (step.wakeAt ?? null);
  }
}
