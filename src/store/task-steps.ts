import type { MissDecision, ParkDecision, StepDecision } from '../core/decisions.js';
import type { StepRecord, StepWrite } from '../core/step-rules.js';
import type { Fence, Millis, TaskRecord } from '../core/types.js';

/** One step a run records in its task's journal (`TaskSteps.recordStep`). */
export interface RecordStepInput {
  /** The recording run's fence: the write is refused unless the run still holds the task. */
  fence: Fence;
  step: StepWrite;
  /**
   * Suspend the task in the same transaction (a sleep, a retry's wait): it stays `working` with
   * `statusMessage`, version + 1, lease cleared, attempt count back to 0, and its outbox entry due
   * at `wakeAt`, so that any worker runs it on then and none holds a slot until then.
   */
  suspend?: { wakeAt: Millis; statusMessage: string } | null;
  /**
   * An event wait's type (a `waiting` row of kind `event` with `suspend`): when an event of that
   * type is already pending the outbox entry is due now, not at the timeout (an event sent while
   * the run decided to wait is not left until then).
   */
  eventType?: string | null;
  /** The bound on a value's JSON text in UTF-8 bytes (`TaskLimits.maxStepBytes`). */
  maxStepBytes: number;
  /** The bounds on the task's journal (`TaskLimits.maxJournalSteps`, `maxJournalBytes`); absent or null: none. */
  maxJournalSteps?: number | null;
  maxJournalBytes?: number | null;
  now: Millis;
  correlationId: string;
}

/**
 * `record` is the task after the decision, for the run's own auth key; its version is one more
 * than the fence's only when the write suspended the task (a step alone leaves the version: the
 * fence is owner and version, and any later claim bumps it).
 */
export interface RecordStepOutcome {
  decision: StepDecision;
  record: TaskRecord | null;
  /** A suspension with `eventType` found an event of that type pending: the task is due now, not at the wake time. */
  dueNow?: boolean;
}

/**
 * A run parks its task (`TaskSteps.park`): its handler disagrees with the journal, and the task
 * is to wait for code that agrees (park-rules.ts).
 */
export interface ParkInput {
  /** The parking run's fence: refused unless the run still holds the task. */
  fence: Fence;
  /** Why, as the status message says it (`parkReason`: the order error and the version that met it). */
  reason: string;
  now: Millis;
  correlationId: string;
}

/**
 * `record` is the task after the decision, for the run's own auth key; applied (`APPLY_PARK`),
 * it is at version + 1, `working`, without a lease, with the parked status message, and its
 * outbox entry is due at `wakeAt` (`parkWrite`: after the `parks`-th park in a row).
 */
export interface ParkOutcome {
  decision: ParkDecision;
  record: TaskRecord | null;
  /** Applied only: the mark the write left and when the task is due again. */
  parked: { parkedAt: Millis; parks: number; wakeAt: Millis } | null;
}

/** Parked tasks (working, unexpired, a park mark set) of one app and tool: the parked-tasks gauge. */
export interface ParkedCount {
  app: string;
  tool: string | null;
  count: number;
}

export type StepsOutcome = { decision: 'FOUND'; steps: StepRecord[] } | { decision: MissDecision; steps: null };

/**
 * The step role: a task's journal of durable steps and sleeps. Recording is one fenced
 * transaction (the task row, the journal rows at the position and of the name, the core's
 * `decideStepRecord`, the row written, the suspension when asked for, one audit line on surface
 * `step`); a run reads its journal once when it starts.
 */
export interface TaskSteps {
  recordStep(input: RecordStepInput): Promise<RecordStepOutcome>;
  /**
   * Parks the run's task in one fenced write (`decidePark`, then `parkWrite` over the mark it
   * finds): version + 1, status message, lease cleared, attempt count back to 0, the park mark
   * (since when, how many in a row), the open outbox entry due at the wake time, one audit line
   * on surface `step`. Nothing terminal: the task stays `working`. The mark goes with the next
   * applied step (the run got past the point) and with any terminal write.
   */
  park(input: ParkInput): Promise<ParkOutcome>;
  /** The caller's task's journal, in position order (`input` is a `TaskRef` with the time). */
  steps(input: { authKey: string; taskId: string; now: Millis }): Promise<StepsOutcome>;
}
