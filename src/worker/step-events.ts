import { decideEventWait, waitingMessage } from '../core/event-rules.js';
import { describeStep, stepOrderMessage, type StepRecord, type StepWrite } from '../core/step-rules.js';
import { stepSizeMessage } from '../core/step-value.js';
import type { ProtocolError } from '../tools/protocol-error.js';
import { checkWaitOptions } from '../tools/event-wait.js';
import { recordableValue, StepFailedError } from '../tools/step.js';
import { endStep, stepSpan } from '../trace/run-spans.js';
import type { StepPort, StepRun } from './step-run.js';
import type { InFlight, RunJournal } from './step-journal.js';
import type { StepWriter } from './step-writes.js';

/** What a wait needs of its run's `StepRunner` (which is one): the journal, the writer, the order check. */
export interface EventWaitHost {
  readonly run: StepRun;
  readonly port: StepPort;
  readonly writer: StepWriter;
  readonly inFlight: InFlight;
  take(name: string): () => void;
  flag(name: string, row: Pick<StepRecord, 'concurrent'> | undefined): boolean;
  throwIfStopped(): void;
  freshPosition(actual: string): Promise<number>;
  load(): Promise<RunJournal>;
  fatal(message: string): ProtocolError;
}

/**
 * `ctx.step.waitForEvent(name, { type, timeoutMs })` in a task. The wait is a journal row of kind
 * `event`, known by its name like a step: `completed` replays its value (the payload, or null);
 * fresh, once the order check lets it through, it is recorded `waiting` with its timeout as
 * `wakeAt`. A `waiting` row asks the store for an event of its type (`takeEvent`, which marks it
 * taken at the row's position, so a run that stops before recording the value takes the same one
 * again); then `decideEventWait`: the payload or, past the timeout, null is recorded `completed`;
 * else the task is suspended until the timeout, with the wait's type, so that a store finding an
 * event of that type already pending makes it due at once (a send that came meanwhile), and a
 * send that comes later makes it due then (its journal holds a `waiting` row).
 */
export async function waitForEvent(host: EventWaitHost, name: string, options: unknown): Promise<unknown> {
  const { type, timeoutMs } = checkWaitOptions(name, options);
  const settle = host.take(name);
  try {
    const journal = await host.load();
    host.throwIfStopped();
    const recorded = journal.named.get(name);
    if (recorded !== undefined && recorded.kind !== 'event') {
      throw host.fatal(stepOrderMessage(recorded.position, describeStep(recorded.kind, recorded.name), describeStep('event', name)));
    }
    if (recorded?.status === 'completed') {
      const value = recorded.value ?? null;
      // The handler has it now: the run keeps no copy.
      recorded.value = undefined;
      return value;
    }
    settle();
    const span = stepSpan(host.run.trace, 'event', name);
    const row = recorded ?? (await fresh(host, name, timeoutMs));
    const taken = await host.port.takeEvent({ fence: host.run.fence(), type, position: row.position });
    if (taken.decision === 'LOST') {
      host.run.stop('lease lost');
      throw host.run.signal.reason as Error;
    }
    const wait = decideEventWait({ wakeAt: row.wakeAt!, event: taken.event, now: host.port.now() });
    const base = waitRow(row, host.flag(name, row));
    if (wait.kind === 'SUSPEND') {
      const out = await host.writer.record(base, { wakeAt: wait.wakeAt, statusMessage: waitingMessage(name, type, wait.wakeAt) }, 0, type);
      endStep(span, 'waiting');
      // An event of its type came meanwhile: the task is due now, and this worker looks at once.
      return host.run.suspend(out.dueNow === true ? host.port.now() : wait.wakeAt);
    }
    const value = wait.kind === 'RECEIVE' ? wait.payload : null;
    const { bytes } = recordableValue(name, 0, value);
    const most = host.port.limits.maxStepBytes;
    const refused = bytes > most ? { message: stepSizeMessage(name, bytes, most) } : (await host.load()).tally.bytesRefusal(row.position, name, bytes);
    // The event stays taken at this position: every later run fails the same way.
    if (refused !== null) throw new StepFailedError(name, 0, refused);
    await host.writer.write(Object.assign(base, { status: 'completed' as const, value, wakeAt: null }), null, bytes);
    endStep(span, wait.kind === 'RECEIVE' ? 'received' : 'timed out');
    // A run that found the wait pending comes after a suspension: its status message goes.
    if (recorded !== undefined) await host.run.passedWait();
    return value;
  } finally {
    settle();
    host.inFlight.take(name);
  }
}

/** A fresh wait: its position once the order check lets it through, recorded `waiting` until the timeout. */
async function fresh(host: EventWaitHost, name: string, timeoutMs: number): Promise<StepRecord> {
  const position = await host.freshPosition(describeStep('event', name));
  const full = (await host.load()).tally.rowRefusal(position, name);
  if (full !== null) throw new StepFailedError(name, 0, full);
  const now = host.port.now();
  const write: StepWrite = { position, name, kind: 'event', status: 'waiting', attempts: 0, wakeAt: now + timeoutMs, startedAt: now };
  // The row's flag is taken with its first write, as a sleep's is.
  const concurrent = host.flag(name, undefined);
  await host.writer.write(Object.assign({}, write, { concurrent }));
  return {
    taskId: host.run.taskId,
    position,
    name,
    kind: 'event',
    status: 'waiting',
    attempts: 0,
    value: undefined,
    error: null,
    valueBytes: 0,
    wakeAt: now + timeoutMs,
    concurrent,
    startedAt: now,
    updatedAt: now,
  };
}

/** The wait's row as a write: pending again until its timeout (the caller sets the end). */
function waitRow(row: StepRecord, concurrent: boolean): StepWrite {
  const { position, name, startedAt, wakeAt } = row;
  return { position, name, kind: 'event', status: 'waiting', attempts: 0, wakeAt, startedAt, concurrent };
}
