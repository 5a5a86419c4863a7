import { taskSupportOf } from '../core/create-rules.js';
import { childIdempotencyKey, childRecheckDelay, decideChildWait, waitingChildrenMessage } from '../core/child-rules.js';
import { describeStep, stepOrderMessage, type StepError, type StepRecord, type StepReplay, type StepWrite } from '../core/step-rules.js';
import { stepSizeMessage } from '../core/step-value.js';
import type { WireRequest } from '../core/types.js';
import { argumentsMessage, parseArguments } from '../tools/invoke-tool.js';
import type { ProtocolError } from '../tools/protocol-error.js';
import { checkStepName, recordableValue, StepFailedError, type ChildOptions, type ChildResult } from '../tools/step.js';
import { endStep, spanCarrier, stepSpan } from '../trace/run-spans.js';
import { stampTraceContext } from '../trace/trace-context.js';
import type { InFlight, Moving, RunJournal } from './step-journal.js';
import type { StepPort, StepRun } from './step-run.js';
import type { StepWriter } from './step-writes.js';

/** What the child steps use of their run's `StepRunner`. */
export interface ChildHost {
  readonly run: StepRun;
  readonly port: StepPort;
  readonly writer: StepWriter;
  readonly moving: Moving;
  readonly inFlight: InFlight;
  take(name: string): () => void;
  flag(name: string, row: Pick<StepRecord, 'concurrent'> | undefined): boolean;
  throwIfStopped(): void;
  replay(name: string, kind: 'child'): Promise<{ replay: StepReplay; row: StepRecord | undefined }>;
  freshPosition(actual: string): Promise<number>;
  load(): Promise<RunJournal>;
  fatal(message: string): ProtocolError;
}

/**
 * `ctx.step.runTool`: child tasks of one run (child-rules.ts). A fresh child is admitted through
 * the guard with an idempotency key derived from the task and the step's name, then its row is
 * written `waiting` with the child's id; a row found `waiting` looks at the child: ended, the row
 * is made final (`completed` with its result, or `failed`) and the step returns or throws; still
 * running, the run waits. A run waits once for all the children its handler reached: each child
 * step still waiting joins one suspension, taken when no other child is being started and the
 * handler has stopped moving (a `Promise.all` of children records every one of them first). The
 * suspension is the rewrite of one waiting row with a recheck time (`childRecheckDelay`); after it
 * the run looks at its children once more, and wakes its own task when one ended meanwhile (its
 * wake came before the suspension and was lost).
 */
export class ChildSteps {
  /** Children being admitted or recorded: the suspension waits for them. */
  private starting = 0;
  private readonly started: Array<() => void> = [];
  /** The waiting children of this run: step name → child task id and its row. */
  private readonly waiting = new Map<string, { taskId: string; row: StepWrite }>();
  private suspension: Promise<never> | null = null;

  constructor(private readonly host: ChildHost) {}

  async runTool(name: string, tool: string, args: Record<string, unknown> | undefined, options: ChildOptions | undefined): Promise<ChildResult> {
    checkStepName(name);
    const { host } = this;
    const settle = host.take(name);
    try {
      const { replay, row } = await host.replay(name, 'child');
      switch (replay.kind) {
        case 'RETURN':
          if (row !== undefined) row.value = undefined;
          return replay.value as ChildResult;
        case 'THROW':
          throw new StepFailedError(name, 0, replay.error);
        case 'AWAIT':
          settle();
          return await this.awaitChild(name, replay.taskId, rowWrite(row!, host.flag(name, row)));
        case 'RUN': {
          settle();
          this.starting++;
          let write: StepWrite;
          try {
            write = await this.start(name, tool, args, options);
          } finally {
            this.startedOne();
          }
          return await this.awaitChild(name, write.value as string, write);
        }
        default:
          throw host.fatal(stepOrderMessage(row?.position ?? 0, row === undefined ? 'nothing' : describeStep(row.kind, row.name), describeStep('child', name)));
      }
    } finally {
      settle();
      host.inFlight.take(name);
    }
  }

  /** A fresh child: the order check, the admission (idempotent), the `waiting` row. */
  private async start(name: string, tool: string, args: Record<string, unknown> | undefined, options: ChildOptions | undefined): Promise<StepWrite> {
    const { host } = this;
    const { run, port } = host;
    const position = await host.freshPosition(describeStep('child', name));
    const full = (await host.load()).tally.rowRefusal(position, name);
    if (full !== null) throw new StepFailedError(name, 0, full);
    const request = this.request(name, tool, args, options);
    if (port.startChild === undefined) throw refused(name, 'this worker cannot start child tasks');
    // The child's first run is a child of this span, in whichever worker it runs.
    const span = stepSpan(run.trace, 'child', name);
    if (span !== null) stampTraceContext(request, spanCarrier(run.trace, span));
    const outcome = await port.startChild({ parent: run.record, tool, request, idempotencyKey: childIdempotencyKey(run.taskId, name) });
    endStep(span, outcome.decision);
    host.throwIfStopped();
    if (outcome.record === null) throw refused(name, admissionMessage(outcome.decision, tool));
    const write: StepWrite = {
      position,
      name,
      kind: 'child',
      status: 'waiting',
      attempts: 0,
      value: outcome.record.taskId,
      startedAt: port.now(),
      concurrent: host.flag(name, undefined),
    };
    await host.writer.write(write);
    run.logger.emit('step:childStarted', { step: name, tool, childTaskId: outcome.record.taskId, replayed: outcome.decision === 'REPLAY_TASK' });
    return write;
  }

  /** The child's request, checked against the worker's tools: it must exist, take tasks and accept `args`. */
  private request(name: string, tool: string, args: Record<string, unknown> | undefined, options: ChildOptions | undefined): WireRequest {
    const found = typeof tool === 'string' ? this.host.run.tools?.get(tool) : undefined;
    if (found === undefined) throw refused(name, `unknown tool ${JSON.stringify(String(tool))} (a child task runs a tool of the same application)`);
    if (taskSupportOf(found) === 'forbidden') throw refused(name, `tool ${JSON.stringify(tool)} does not run as a task`);
    const parsed = parseArguments(found, args ?? {});
    if (!parsed.success) throw refused(name, argumentsMessage(found, parsed.error));
    const ttl = options?.ttlMs;
    if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0))
      throw refused(name, 'ttlMs must be a positive number of milliseconds');
    // The same request on every run (its digest is the idempotency check's): no time in it.
    return { method: 'tools/call', params: { name: tool, arguments: args ?? {}, task: ttl === undefined ? {} : { ttl: Math.ceil(ttl) } } };
  }

  /** A child whose row says `waiting`: its end, recorded and returned (or thrown), or the run's wait. */
  private async awaitChild(name: string, childTaskId: string, row: StepWrite): Promise<ChildResult> {
    const { host } = this;
    const decision = await this.look(childTaskId);
    host.throwIfStopped();
    if (decision.kind === 'RETURN') {
      const value = await this.recordEnd(row, decision.value);
      await host.run.passedWait();
      return value;
    }
    if (decision.kind === 'THROW') {
      await host.writer.failStep(endBase(row), decision.error);
    }
    this.waiting.set(name, { taskId: childTaskId, row });
    return this.suspend();
  }

  /** A completed child's result as the step's value: recorded, or the step fails when the journal cannot keep it. */
  private async recordEnd(row: StepWrite, result: unknown): Promise<ChildResult> {
    const { host } = this;
    const { name, position } = row;
    let recorded: { value: unknown; bytes: number };
    try {
      recorded = recordableValue(name, 0, result);
    } catch (error) {
      if (!(error instanceof StepFailedError)) throw error;
      return host.writer.failStep(endBase(row), error.error);
    }
    const most = host.port.limits.maxStepBytes;
    const tooBig = recorded.bytes > most ? { message: stepSizeMessage(name, recorded.bytes, most) } : null;
    const over = tooBig ?? (await host.load()).tally.bytesRefusal(position, name, recorded.bytes);
    if (over !== null) return host.writer.failStep(endBase(row), over);
    await host.writer.write(Object.assign(endBase(row), { status: 'completed' as const, value: recorded.value }), null, recorded.bytes);
    return recorded.value as ChildResult;
  }

  /** How the child stands, read now with the parent's auth key. */
  private async look(childTaskId: string): Promise<ReturnType<typeof decideChildWait>> {
    const { run, port } = this.host;
    if (port.lookup === undefined) return { kind: 'WAIT' };
    const found = await port.lookup({ auth: run.record.authKey, taskId: childTaskId });
    return decideChildWait({ child: found.decision === 'FOUND' ? found.record : null, now: port.now(), childTaskId });
  }

  /** One suspension for every child this run waits for, once none is being started and the handler stopped moving. */
  private suspend(): Promise<never> {
    this.suspension ??= this.suspendOnce();
    return this.suspension;
  }

  private async suspendOnce(): Promise<never> {
    const { host } = this;
    const { run, port } = host;
    for (;;) {
      if (this.starting > 0) await new Promise<void>((resolve) => this.started.push(resolve));
      else if (!(await host.moving.moved())) break;
      host.throwIfStopped();
    }
    const waits = [...this.waiting.values()];
    const now = port.now();
    const since = Math.min(...waits.map((w) => w.row.startedAt));
    const wakeAt = now + childRecheckDelay(now - since);
    const first = waits[0]!.row;
    await host.writer.write(first, { wakeAt, statusMessage: waitingChildrenMessage([...this.waiting.keys()]) });
    // A child that ended before the suspension woke a task that still ran: wake it now.
    for (const w of waits) {
      const decision = await this.look(w.taskId).catch(() => ({ kind: 'WAIT' }) as const);
      if (decision.kind !== 'WAIT') {
        await port.wakeParent?.({ taskId: w.taskId });
        break;
      }
    }
    return run.suspend(wakeAt);
  }

  private startedOne(): void {
    this.starting--;
    if (this.starting > 0) return;
    for (const resolve of this.started.splice(0)) resolve();
  }
}

/** The row a `waiting` row is written again as (the same position, value and flag). */
function rowWrite(row: StepRecord, concurrent: boolean): StepWrite {
  const { position, name, startedAt } = row;
  return { position, name, kind: 'child', status: 'waiting', attempts: 0, value: row.value, startedAt, concurrent };
}

/** The final row's fields: the waiting row's without its value. */
function endBase(row: StepWrite): Omit<StepWrite, 'status'> {
  return { position: row.position, name: row.name, kind: 'child', attempts: 0, startedAt: row.startedAt, concurrent: row.concurrent ?? false };
}

/** A child the step could not start: the step fails, and nothing is recorded (a later run tries again). */
function refused(name: string, message: string): StepFailedError {
  const error: StepError = { name: 'ChildTaskError', message: `step ${JSON.stringify(name)}: ${message}` };
  return new StepFailedError(name, 0, error);
}

function admissionMessage(decision: string, tool: string): string {
  switch (decision) {
    case 'BLOCK_TASK_LIMIT':
      return `the principal's limit of running tasks refused child task ${JSON.stringify(tool)}`;
    case 'BLOCK_STORED_LIMIT':
      return `the principal's limit of stored tasks refused child task ${JSON.stringify(tool)}`;
    case 'BLOCK_IDEMPOTENCY_COLLISION':
      return `a child task of this step was started with other arguments (the handler must pass the same tool and arguments on every run)`;
    default:
      return `child task ${JSON.stringify(tool)} was not admitted (${decision})`;
  }
}
