import { describeStep, stepOrderMessage, type StepError, type StepRecord, type StepWrite } from '../core/step-rules.js';
import { journalLimitMessage, retryingMessage, sleepingMessage } from '../core/step-value.js';
import type { Millis } from '../core/types.js';
import type { RecordStepOutcome } from '../store/types.js';
import type { ProtocolError } from '../tools/protocol-error.js';
import { StepFailedError, type StepConfig } from '../tools/step.js';
import type { StepPort, StepRun, Suspension } from './step-run.js';
import type { RunJournal } from './step-journal.js';
import { writeOfUnknownFate } from './unknown-write.js';

/**
 * The fenced writes of one run's journal. A refusal stops the run as any refused write of it does
 * (a stale fence: the lease is lost; a terminal task: cancelled). A write whose fate is unknown
 * (the store did not answer) is looked for in the journal, and written again only if it is not
 * there, while the lease holds (`writeOfUnknownFate`).
 */
export class StepWriter {
  constructor(
    private readonly run: StepRun,
    private readonly port: StepPort,
    private readonly journal: () => Promise<RunJournal>,
    private readonly fatal: (message: string) => ProtocolError,
  ) {}

  /** `eventType`: the type of an event wait the write suspends the task in (`RecordStepInput.eventType`). */
  async write(step: StepWrite, suspend: Suspension | null = null, valueBytes = 0): Promise<void> {
    await this.record(step, suspend, valueBytes);
  }

  /** `write`, and the store's outcome (an applied one: a refusal throws); `eventType` as `RecordStepInput.eventType`. */
  async record(step: StepWrite, suspend: Suspension | null = null, valueBytes = 0, eventType: string | null = null): Promise<RecordStepOutcome> {
    const written = await writeOfUnknownFate<RecordStepOutcome>({
      what: 'step',
      step: step.name,
      attempt: () => this.run.serial(() => this.port.recordStep({ fence: this.run.fence(), step, suspend, eventType })),
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
    if (out.decision === 'APPLY_STEP') (await this.journal()).tally.wrote(step.position, valueBytes);
    this.outcome(step, suspend, out);
    return out;
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

  /** Records a final failure and throws it into the handler. */
  async failStep(base: Omit<StepWrite, 'status'>, error: StepError): Promise<never> {
    await this.write(Object.assign({}, base, { status: 'failed' as const, error }));
    if (base.attempts > 1) await this.run.passedWait();
    throw new StepFailedError(base.name, base.attempts, error);
  }

  /**
   * A sleep or a retry claimed before its time (a skewed clock, a manual release): suspended
   * again until the same wake time, with the same row, so the outbox entry is due then again.
   */
  async waitAgain(row: StepRecord, wakeAt: Millis, config: StepConfig): Promise<never> {
    const { position, name, kind, status, attempts, error, startedAt, concurrent } = row;
    const statusMessage =
      kind === 'sleep' ? sleepingMessage(name, wakeAt) : retryingMessage(name, attempts + 1, Math.max(attempts, config.retries?.limit ?? 0) + 1, wakeAt);
    await this.write({ position, name, kind, status, attempts, error, wakeAt, startedAt, concurrent }, { wakeAt, statusMessage });
    return this.run.suspend(wakeAt);
  }

  /** After a write of unknown fate: whether the journal holds it now (a failed read throws). */
  private async landed(step: StepWrite): Promise<boolean> {
    const rows = await this.port.lookupSteps({ auth: this.run.record.authKey, taskId: this.run.taskId });
    const row = rows.find((r) => r.position === step.position);
    return row !== undefined && row.name === step.name && row.status === step.status && row.attempts === step.attempts && row.wakeAt === (step.wakeAt ?? null);
  }
}

/** The row of a sleep the run passed: `woke`, its wake time kept. */
export function wokeRow(row: StepRecord, concurrent: boolean): StepWrite {
  const { position, name, startedAt, wakeAt } = row;
  return { position, name, kind: 'sleep', status: 'woke', attempts: 0, wakeAt, startedAt, concurrent };
}
