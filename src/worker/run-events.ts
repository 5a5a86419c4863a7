import { coerceError, isStoreFault, isTasklatchError } from '../core/errors.js';
import type { TaskRecord } from '../core/types.js';

/** How much a run event matters. */
export type RunLevel = 'info' | 'warn' | 'error';

/**
 * Where a worker's events go, one line each (`TaskRuntime` writes them to its pino logger):
 * `fields` hold the event's name (`event`), the scope it was emitted in (`workerId`, and for a
 * run's events `taskId` and `attempt`) and its own fields; an error is `err`, an `Error`.
 */
export type RunLogSink = (level: RunLevel, message: string, fields: Record<string, unknown>) => void;

/** The fields every line of a run carries: whose run it is, of which task, at which claim. */
export interface RunScope {
  workerId: string;
  taskId?: string;
  attempt?: number;
}

/** The own fields of each event of a worker and its runs; `err` is always an `Error` (see `coerceError`). */
export interface RunEventMap {
  /** The worker started claiming, only for its app and tools. */
  'worker:started': { app: string; tools: readonly string[]; versions: Readonly<Record<string, string>> };
  /** A claim failed; the worker tries again after a pause that grows with `failures`. */
  'worker:claimFailed': { err: Error; failures: number };
  /** Announcing or reading the live tool versions failed; the worker keeps the grants it had and tries at its next renewal. */
  'worker:versionsFailed': { err: Error; failures: number };
  /**
   * A task its admission leased to this worker found no slot free for as long as such a task
   * waits (`admissionWaitMs`): its lease was given back (`released`: the store took it) for any
   * worker to claim.
   */
  'worker:admissionGivenBack': { taskId: string; released: boolean };
  /** A task was admitted with another definition of its tool than this worker's; it runs with this one. */
  'run:otherDefinition': { app: string; tool: string; admittedDigest: string; workerDigest: string };
  /** A run threw out of the executor (a fault of tasklatch's own): the task is left to its lease. */
  'run:error': { err: Error };
  /** The handler threw (its task ends failed with the message, or runs again after a store fault). */
  'run:handlerThrew': { err: Error };
  /** A heartbeat met an error; the lease holds until it runs out, and the next heartbeat tries again. */
  'run:heartbeatFailed': { err: Error };
  /** A status message was not stored (best effort: the handler goes on). */
  'run:statusNotStored': { err: Error };
  /** A checkpoint could not reach the store; it asks again while the lease holds. */
  'run:checkpointRetry': { err: Error; retry: number };
  /** A store call the handler made failed (`what`): a store fault stops the run, which runs again. */
  'run:storeFailed': { what: string; err: Error };
  /** A fenced write met an error, so its fate is unknown: the stored fact is read before it is written again. */
  'run:writeUnknown': { write: string; step?: string; err: Error; retry: number };
  /** The result is over the size bound: the task ends failed saying so. */
  'run:resultTooLarge': { bytes: number; limit: number };
  /** The store refused the result's text (`err` names the field, never the text): the task ends failed saying so. */
  'run:resultUnstorable': { err: Error };
  /** The terminal write was refused: the task had ended otherwise, or is another run's. */
  'run:terminalRefused': { decision: string; stored: string | null };
  /** The run suspended until a time (a sleep, a retry's wait). */
  'run:sleeps': { until: string };
  /** The run suspended until its questions are answered. */
  'run:waitsForInput': Record<string, never>;
  /** The run stopped at a store fault; the task runs again once the store is back. */
  'run:storeUnavailable': Record<string, never>;
  /** The run stopped without a terminal write (its lease lost, its task expired, ended otherwise or gone). */
  'run:stopped': { reason: string };
  /** The journal could not be read; it is read again while the lease holds. */
  'step:journalRetry': { err: Error; retry: number };
  /** Patch gates told `false` met the journal going on along their new path: their markers are recorded and the task runs again at once. */
  'step:gatesRevised': { gates: string[]; position: number };
  /** The handler started a child task (`ctx.step.runTool`); `replayed`: the admission found the child an earlier run started. */
  'step:childStarted': { step: string; tool: string; childTaskId: string; replayed: boolean };
  /** The handler broke its journal (steps out of order, a name used twice): the task parks or ends failed (`parks`). */
  'step:journalBroken': { reason: string };
  /** The run parked its task (a journal mismatch): why, the park count in a row, and when it is due again. */
  'run:parked': { reason: string; parks: number; until: string };
  /** The park write was refused (the fence no longer holds): the run ends with nothing written. */
  'run:parkRefused': { decision: string };
}

export type RunEventName = keyof RunEventMap;

/** The level and message of each event: said once, here. */
export const RUN_EVENTS: { readonly [N in RunEventName]: { level: RunLevel; message: string } } = {
  'worker:started': {
    level: 'info',
    message: 'worker runs only the tasks of its app and tools; tasks of other apps and tools are left for workers that know them',
  },
  'worker:claimFailed': { level: 'warn', message: 'claim failed; retrying' },
  'worker:versionsFailed': { level: 'warn', message: 'tool versions not announced or read; retrying at the next renewal' },
  'worker:admissionGivenBack': { level: 'info', message: 'no slot freed for a task leased by its admission; lease given back' },
  'run:otherDefinition': { level: 'warn', message: "task admitted with another definition of its tool; running it with this worker's definition" },
  'run:error': { level: 'error', message: 'task run failed' },
  'run:handlerThrew': { level: 'warn', message: 'tool handler threw' },
  'run:heartbeatFailed': { level: 'warn', message: 'heartbeat failed' },
  'run:statusNotStored': { level: 'warn', message: 'status message not stored' },
  'run:checkpointRetry': { level: 'warn', message: 'checkpoint: store unreachable; retrying' },
  'run:storeFailed': { level: 'warn', message: 'a store call of the run failed' },
  'run:writeUnknown': { level: 'warn', message: 'write of unknown fate; reading the stored fact before writing again' },
  'run:resultTooLarge': { level: 'warn', message: 'task result over the size bound; the task ends failed' },
  'run:resultUnstorable': { level: 'warn', message: 'task result refused by the store; the task ends failed' },
  'run:terminalRefused': { level: 'info', message: 'terminal write refused' },
  'run:sleeps': { level: 'info', message: 'task sleeps' },
  'run:waitsForInput': { level: 'info', message: 'task waits for input' },
  'run:storeUnavailable': { level: 'warn', message: 'task stopped by a store fault; it runs again' },
  'run:stopped': { level: 'info', message: 'task stopped without a terminal write' },
  'step:journalRetry': { level: 'warn', message: 'journal not read; retrying' },
  'step:childStarted': { level: 'info', message: 'child task started' },
  'step:gatesRevised': { level: 'info', message: 'patch gates told false met their new path in the journal; the task runs again, told true' },
  'step:journalBroken': {
    level: 'error',
    message: "the run broke its journal; the task parks (a mismatch) or ends failed (by its tool's onJournalMismatch, or a name used twice)",
  },
  'run:parked': { level: 'warn', message: 'the handler disagrees with the journal; the task is parked and tried again later' },
  'run:parkRefused': { level: 'info', message: 'park refused' },
};

/**
 * A worker's logger, scoped: `scope` gives a child with more fields bound (the worker's id, then
 * a run's task and attempt), so every line of a run says whose it is. Every event goes out
 * through `emit`, with the level and message `RUN_EVENTS` gives it.
 */
export class RunLogger {
  private constructor(
    private readonly sink: RunLogSink | null,
    private readonly bindings: Readonly<Record<string, unknown>>,
  ) {}

  /** The root logger over `sink` (none: the events go nowhere). */
  static to(sink?: RunLogSink): RunLogger {
    return new RunLogger(sink ?? null, {});
  }

  /** A child with `bindings` added to every line. */
  scope(bindings: Partial<RunScope>): RunLogger {
    return new RunLogger(this.sink, Object.assign({}, this.bindings, bindings));
  }

  /** A child for the run of `record` by worker `workerId`. */
  run(record: TaskRecord, workerId: string): RunLogger {
    return this.scope({ workerId, taskId: record.taskId, attempt: record.attempt });
  }

  emit<N extends RunEventName>(event: N, fields: RunEventMap[N]): void {
    if (this.sink === null) return;
    const { level, message } = RUN_EVENTS[event];
    const line: Record<string, unknown> = Object.assign({ event }, this.bindings, fields);
    if (line.err !== undefined) line.err = loggedError(line.err);
    this.sink(level, message, line);
  }
}

/**
 * An error as a line shows it: with its stack, except a store outage, which is no fault of the
 * process and is said in one line (its type, code and message) however often it is met.
 */
function loggedError(thrown: unknown): Error | { type: string; code: string; message: string } {
  const error = coerceError(thrown);
  if (!isStoreFault(error)) return error;
  return { type: error.name, code: isTasklatchError(error) ? error.code : 'STORE_UNAVAILABLE', message: error.message };
}
