import type { Decision } from '../core/decisions.js';
import type { TaskRecord, TaskStatus } from '../core/types.js';
import type { AuditEntry, OverdueOutcome, TaskStore } from '../store/types.js';

/** One decision, as its audit line says it (what a log line and a counter need of it). */
export interface DecisionEvent {
  surface: AuditEntry['surface'];
  decision: Decision;
  authKey: string;
  taskId: string | null;
  correlationId: string;
  /** The tool of a create decision. */
  tool?: string | null;
  status?: string | null;
  detail?: string | null;
}

/** A task that reached a terminal status through this process. */
export interface TaskEndEvent {
  taskId: string;
  authKey: string;
  tool: string | null;
  status: TaskStatus;
  attempts: number;
  /** From admission to the end. */
  durationMs: number;
  correlationId: string;
}

/** One claim by this process's worker. */
export interface ClaimEvent {
  record: TaskRecord;
  /** From admission to this claim, for a first attempt; null for a task claimed again. */
  waitedMs: number | null;
  /** Claimed again after an earlier claim's lease lapsed or was given back. */
  takeover: boolean;
}

/** One handler run, from its claim until it stopped. */
export interface RunEvent {
  taskId: string;
  tool: string | null;
  /** `completed`/`failed` (the terminal write's status), or why it stopped without one. */
  outcome: string;
  durationMs: number;
}

/** One attempt of a durable step's function (`ctx.step.do`) run by this process's worker. */
export interface StepRunEvent {
  taskId: string;
  tool: string | null;
  step: string;
  /** `completed` (its value recorded), `retrying` (it threw; a durable wait, then another attempt), `failed` (for good). */
  outcome: 'completed' | 'retrying' | 'failed';
  attempt: number;
  durationMs: number;
}

/**
 * Who hears what the service, its worker and the wires decide and do: the logger, the metrics.
 * Every method is optional and called synchronously on the path it reports, so each must be
 * cheap and must not throw (a throw is caught and dropped).
 */
export interface TaskObserver {
  decision?(event: DecisionEvent): void;
  taskEnded?(event: TaskEndEvent): void;
  claimed?(event: ClaimEvent): void;
  runEnded?(event: RunEvent): void;
  stepRan?(event: StepRunEvent): void;
  heartbeatFailed?(event: { taskId: string; lost: boolean; error?: string }): void;
  /** A store operation's round trip (`operation` is the store method's name). */
  storeCall?(operation: string, ms: number, failed: boolean): void;
  /** A `tasks/result` held open (+1) or answered (-1); a subscription opened or closed. */
  waiting?(kind: 'result' | 'subscription', delta: 1 | -1): void;
}

type Hook = keyof TaskObserver;

/** The observers of one service; emitting to none costs one length check. */
export class TaskEvents {
  private readonly observers: TaskObserver[] = [];

  /** Adds an observer; the returned function removes it. */
  add(observer: TaskObserver): () => void {
    this.observers.push(observer);
    return () => {
      const at = this.observers.indexOf(observer);
      if (at >= 0) this.observers.splice(at, 1);
    };
  }

  /** Whether anyone listens for `hook` (lets a caller skip building an event). */
  wants(hook: Hook): boolean {
    // A loop, not `some` with a closure: asked on every decision.
    for (const observer of this.observers) if (observer[hook] !== undefined) return true;
    return false;
  }

  emit<H extends Hook>(hook: H, ...args: Parameters<NonNullable<TaskObserver[H]>>): void {
    for (const observer of this.observers) {
      const fn = observer[hook] as ((...a: unknown[]) => void) | undefined;
      if (fn === undefined) continue;
      try {
        fn.apply(observer, args);
      } catch {
        // An observer's failure must never fail the decision it observes.
      }
    }
  }
}

/** A claimed record's event: a first attempt waited since its admission; a later one follows a lapsed or returned lease. */
export function claimEventOf(record: TaskRecord, now: number): ClaimEvent {
  return { record, waitedMs: record.attempt === 1 ? now - record.createdAt : null, takeover: record.attempt > 1 };
}

/** The task-end event of a terminal record. */
export function taskEndOf(record: TaskRecord, correlationId: string): TaskEndEvent {
  const { taskId, authKey, toolName: tool, status, attempt: attempts } = record;
  return { taskId, authKey, tool, status, attempts, durationMs: record.lastUpdatedAt - record.createdAt, correlationId };
}

/**
 * Reports the tasks an input deadline ended (their decisions and ends): the store's answer names
 * only the task, so the operator's read finds whose it was. Nothing is read when nobody listens.
 */
export async function reportOverdue(store: Pick<TaskStore, 'inspectTask'>, events: TaskEvents, ended: OverdueOutcome, correlationId: string): Promise<void> {
  if (!events.wants('decision') && !events.wants('taskEnded')) return;
  for (const { taskId } of ended) {
    const seen = await store.inspectTask({ taskId }).catch(() => null);
    if (seen === null) continue;
    const { authKey, status } = seen.record;
    events.emit('decision', { surface: 'transition', decision: 'APPLY_TRANSITION', authKey, taskId, correlationId, status, detail: 'input deadline' });
    if (status === 'failed') events.emit('taskEnded', taskEndOf(seen.record, correlationId));
  }
}
