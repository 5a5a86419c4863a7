import type { StoredInput } from '../core/input-rules.js';
import type { Millis, TaskRecord } from '../core/types.js';
import type { WorkerPort } from '../service/worker-port.js';
import type { Fence } from '../store/types.js';
import type { ProtocolError } from '../tools/protocol-error.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { RunTrace } from '../trace/run-spans.js';
import type { RunLogger } from './run-events.js';

/** How a write that suspends the task says until when, and why (its status message). */
export type Suspension = { wakeAt: Millis; statusMessage: string };

/** What a run's steps need of the worker port: the journal's read and its fenced write, the step limit, the clock, the events. */
export type StepPort = Pick<WorkerPort, 'limits' | 'events' | 'now' | 'recordStep' | 'lookupSteps' | 'takeEvent'> &
  Partial<Pick<WorkerPort, 'lookup' | 'startChild' | 'wakeParent'>>;

/**
 * What a run's steps need of the run that holds the fence (`TaskRun` is the one): its task, its
 * signal, its lease, its write chain, its stored questions, and the ways it stops.
 */
export interface StepRun {
  readonly record: TaskRecord;
  /** The tools of the run's worker: a child task's tool and arguments are checked against them (absent: no child tasks). */
  readonly tools?: ToolRegistry;
  readonly taskId: string;
  readonly signal: AbortSignal;
  /** The fence's version: a suspending write moves it on. */
  version: number;
  readonly leaseUntil: number;
  /** Set when the handler broke its journal: the run ends with it, whatever the handler returns. */
  fatal: ProtocolError | null;
  /** The run's logger (its worker, task and attempt bound). */
  readonly logger: RunLogger;
  /** The run's span: its steps' spans are its children (absent: none). */
  readonly trace?: RunTrace;
  fence(): Fence;
  /** `drained`: the run gives the task back to run again at once (a patch gate revised). */
  stop(reason: 'cancelled' | 'expired' | 'lease lost' | 'drained'): void;
  serial<T>(work: () => Promise<T>): Promise<T>;
  checkpoint(): Promise<void>;
  storedInputs(): Promise<StoredInput[]>;
  /** The handler passed a wait (a woken sleep, a retried step's last attempt): the wait's status message goes. */
  passedWait(): Promise<void>;
  /** Stops the handler while the task waits (until `wakeAt`, when given); never returns. */
  suspend(wakeAt?: number): never;
}
