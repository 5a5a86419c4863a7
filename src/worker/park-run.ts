import { coerceError } from '../core/errors.js';
import { isJournalMismatch, isParkedMessage, parkReason } from '../core/park-rules.js';
import type { WorkerPort } from '../service/worker-port.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { StepPort, StepRun } from './step-runner.js';

/**
 * Parking a run (park-rules.ts): the handler disagrees with its task's journal, and instead of
 * the terminal `failed` (final by the latch: nothing could repair it) the run gives the task
 * back, working, due again after the backoff, its status message saying why.
 */

/** How many hex characters of a version a status message shows. */
const VERSION_CHARS = 16;

/**
 * Whether the run's fatal error parks its task rather than failing it: a journal mismatch, on a
 * tool that did not ask to fail (`onJournalMismatch: 'fail'`).
 */
export function parks(run: Pick<StepRun, 'fatal' | 'record'>, tools: ToolRegistry): boolean {
  if (run.fatal === null || !isJournalMismatch(run.fatal.message)) return false;
  const tool = run.record.toolName === null ? undefined : tools.get(run.record.toolName);
  return (tool?.onJournalMismatch ?? 'park') === 'park';
}

/**
 * The version a parked task's message names: the version of the code that met the mismatch (the
 * worker's `ToolRegistry.version` of the tool), and the task's own where it was admitted with
 * another (`version 3f2a…, admitted as 9c1b…`); null when neither is known. Versions are short
 * already (a 16-character digest, or the author's own name); a long one is cut.
 */
export function runVersion(run: Pick<StepRun, 'record'>, tools: ToolRegistry): string | null {
  const { toolName, toolVersion } = run.record;
  const own = toolName === null ? null : tools.version(toolName);
  const cut = (v: string) => (v.length > VERSION_CHARS ? `${v.slice(0, VERSION_CHARS)}…` : v);
  if (own === null) return toolVersion === null ? null : cut(toolVersion);
  return toolVersion === null || toolVersion === own ? cut(own) : `${cut(own)}, admitted as ${cut(toolVersion)}`;
}

/**
 * Parks the run's task with one fenced write (`WorkerPort.park`): the wake time when it applied,
 * else null (the fence no longer holds: cancelled, expired, or another run took the task; a
 * store fault leaves the lease to run out, and the next claim meets the same mismatch).
 */
export async function parkRun(run: StepRun, port: Pick<WorkerPort, 'park'>, version: string | null): Promise<number | null> {
  const reason = parkReason(run.fatal!.message, version);
  try {
    const out = await run.serial(() => port.park({ fence: run.fence(), reason }));
    if (out.decision !== 'APPLY_PARK' || out.parked === null) {
      run.logger.emit('run:parkRefused', { decision: out.decision });
      return null;
    }
    run.logger.emit('run:parked', { reason, parks: out.parked.parks, until: new Date(out.parked.wakeAt).toISOString() });
    return out.parked.wakeAt;
  } catch (error) {
    run.logger.emit('run:storeFailed', { what: 'park', err: coerceError(error) });
    return null;
  }
}

/**
 * The step port a run's `StepRunner` is given: the worker's, with one addition. A run claimed
 * from a park that records a step got past the point it parked at (the store clears the mark
 * with the step): the parked message the claim found goes too, as a woken sleep's does
 * (`TaskRun.passedWait`: once, and not over a message the handler set itself).
 */
export function unparkingPort(run: Pick<StepRun, 'record' | 'passedWait'>, port: StepPort): StepPort {
  return isParkedMessage(run.record.statusMessage) ? new UnparkingStepPort(run, port) : port;
}

class UnparkingStepPort implements StepPort {
  constructor(
    private readonly run: Pick<StepRun, 'passedWait'>,
    private readonly port: StepPort,
  ) {}

  get limits(): StepPort['limits'] {
    return this.port.limits;
  }

  get events(): StepPort['events'] {
    return this.port.events;
  }

  now(): number {
    return this.port.now();
  }

  lookupSteps(input: Parameters<StepPort['lookupSteps']>[0]): ReturnType<StepPort['lookupSteps']> {
    return this.port.lookupSteps(input);
  }

  takeEvent(input: Parameters<StepPort['takeEvent']>[0]): ReturnType<StepPort['takeEvent']> {
    return this.port.takeEvent(input);
  }

  async recordStep(input: Parameters<StepPort['recordStep']>[0]): ReturnType<StepPort['recordStep']> {
    const out = await this.port.recordStep(input);
    // Not awaited: the step's write holds the run's write chain, and the status write queues behind it.
    if (out.decision === 'APPLY_STEP' && !input.suspend) void this.run.passedWait();
    return out;
  }

  // A child task's admission, its look and its wake go through unchanged.
  get lookup(): StepPort['lookup'] {
    return this.port.lookup?.bind(this.port);
  }

  get startChild(): StepPort['startChild'] {
    return this.port.startChild?.bind(this.port);
  }

  get wakeParent(): StepPort['wakeParent'] {
    return this.port.wakeParent?.bind(this.port);
  }
}
