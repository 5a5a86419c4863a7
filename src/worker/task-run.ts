import { setTimeout as sleep } from 'node:timers/promises';
import { jcsSha256 } from '../core/digest.js';
import { coerceError, isStoreFault, isTasklatchError } from '../core/errors.js';
import type { InputRequest, StoredInput } from '../core/input-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { isTerminal, type TaskRecord } from '../core/types.js';
import { visibleTo } from '../core/visibility.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { jsonBytes } from '../service/limits.js';
import type { WorkerPort } from '../service/worker-port.js';
import type { AskOutcome, Fence } from '../store/types.js';
import type { StoredError } from '../tools/protocol-error.js';
import type { AskOptions } from '../tools/asking.js';
import type { ToolResult } from '../tools/tool.js';
import type { RunLogger } from './run-events.js';
import { unparkingPort } from './park-run.js';
import { StepRunner } from './step-runner.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { retryPause, writeOfUnknownFate } from './unknown-write.js';
import { endStep, NO_RUN_TRACE, stepSpan, type RunTrace } from '../trace/run-spans.js';

/** The lease a worker holds on a claimed task. */
export interface Lease {
  owner: string;
  leaseMs: number;
  /** How often the lease is renewed; also how soon a cancellation written elsewhere is seen. */
  heartbeatMs: number;
}

/**
 * Why a run stopped; `suspended`: it asked its requestor and waits, without a worker, for the
 * answers; `store unavailable`: a write of the run met a store fault, so the run stops without a
 * terminal write and the task is run again (its lease given back, or left to expire).
 */
export type StopReason = 'cancelled' | 'expired' | 'lease lost' | 'drained' | 'suspended' | 'store unavailable';

/**
 * One claimed run of a task: the fence it holds (its lease owner and the version it wrote
 * last), why it stopped if it did, and every write it makes. Writes are serialized, so a
 * heartbeat never races a status write for the version. A refused write is classified by the
 * store and never retried blindly: after an error the stored fact is read first, and only a
 * record still at our version and still working is written again.
 */
export class TaskRun {
  readonly controller = new AbortController();
  /** The version this run wrote last: its fence. */
  version: number;
  /** Until when the lease is known to hold (claim or last successful heartbeat). */
  leaseUntil: number;
  stopped: StopReason | null = null;
  /** What the terminal write did: the status it wrote, or `refused` (the store said why); `parked`: the run parked its task instead. */
  ended: 'completed' | 'failed' | 'refused' | 'parked' | null = null;
  /**
   * Set when the handler broke its task's journal (steps, sleeps and asks out of order, a step
   * name used twice): the task parks (a mismatch, park-run.ts) or ends failed with this error,
   * whatever the handler returns.
   */
  fatal: ProtocolError | null = null;
  /** Set when the run suspended for a sleep or a retry's wait: the suspend write gave the lease back. */
  wakeAt: number | null = null;
  /** The handler's durable steps (`ctx.step`). */
  readonly steps: StepRunner;
  /** The run's span, its steps' parent (a no-op span until the executor starts one). */
  trace: RunTrace = NO_RUN_TRACE;
  private chain: Promise<unknown> = Promise.resolve();
  /** How many times the handler has asked in this run: the key to its earlier questions. */
  private asks = 0;
  private asked: Promise<StoredInput[]> | null = null;
  /** Whether the handler set its own status message in this run (the terminal write keeps it), and whether the claim's message was cleared. */
  private message: { own: boolean; cleared: boolean } = { own: false, cleared: false };

  constructor(
    readonly record: TaskRecord,
    readonly lease: Lease,
    private readonly port: WorkerPort,
    /** The run's logger: every line carries its worker id, task id and attempt. */
    readonly logger: RunLogger,
    /** The worker's tools, for the child tasks the handler starts. */
    readonly tools?: ToolRegistry,
  ) {
    this.version = record.version;
    this.leaseUntil = record.leaseExpiresAt ?? port.now() + lease.leaseMs;
    this.steps = new StepRunner(this, unparkingPort(this, port));
  }

  get taskId(): string {
    return this.record.taskId;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  fence(): Fence {
    return { taskId: this.record.taskId, authKey: this.record.authKey, owner: this.lease.owner, version: this.version };
  }

  /** Stops the handler; the first reason given is the one that counts. */
  stop(reason: StopReason): void {
    this.stopped ??= reason;
    this.controller.abort(new Error(`task ${reason}`));
  }

  /** Runs `work` after every write of this run queued before it. */
  serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Extends the lease; true while the fence holds. */
  async renew(): Promise<boolean> {
    const now = this.port.now();
    const holds = await this.port.heartbeat({ fence: this.fence(), leaseMs: this.lease.leaseMs });
    if (holds) this.leaseUntil = now + this.lease.leaseMs;
    return holds;
  }

  /** A heartbeat on the write chain; a lost fence stops the run, a store error is only logged. */
  beat(): void {
    // A suspended run gave its lease back with its suspend write: there is nothing to renew.
    if (this.stopped === 'suspended') return;
    this.serial(() => this.renew()).then(
      (holds) => {
        if (holds) return;
        this.port.events.emit('heartbeatFailed', { taskId: this.taskId, lost: true });
        this.stop('lease lost');
      },
      (error: unknown) => {
        const err = coerceError(error);
        this.port.events.emit('heartbeatFailed', { taskId: this.taskId, lost: false, error: err.message });
        this.logger.emit('run:heartbeatFailed', { err });
      },
    );
  }

  /** A change event for this task from any writer: a version we did not write is read and judged. */
  observe(version: number | undefined, carried?: TaskRecord): void {
    // Our own writes come back as events too; a version we wrote needs no read.
    if (version !== undefined && version <= this.version) return;
    // A terminal record the change carried is committed and final: judged as the read would
    // have returned it (the read's own visibility rule), without the read.
    if (carried !== undefined && carried.version > this.version && isTerminal(carried.status)) {
      return this.judge(visibleTo(carried, this.record.authKey, this.port.now()) ? carried : null);
    }
    this.port.lookup({ auth: this.record.authKey, taskId: this.taskId }).then(
      (found) => this.judge(found.record),
      () => undefined,
    );
  }

  /** The task as its caller sees it now: gone (expired) or ended elsewhere stops the run. */
  private judge(record: TaskRecord | null): void {
    if (record === null) this.stop('expired');
    else if (isTerminal(record.status)) this.stop('cancelled');
  }

  /**
   * Sets the status message. Best effort: a store error is logged, never thrown into the handler;
   * when the write's fate is unknown the stored fact is read, and our own write adopted.
   */
  reportStatus(message: string): Promise<void> {
    this.message.own = true;
    return this.writeStatus(message);
  }

  /**
   * The handler passed a wait (a woken sleep, a retried step's last attempt): the message the
   * claim found (`sleeping until …`, `retrying step …`) is cleared, once, unless the handler has
   * set its own in this run.
   */
  passedWait(): Promise<void> {
    if (this.message.own || this.message.cleared || this.record.statusMessage === null) return Promise.resolve();
    this.message.cleared = true;
    return this.writeStatus(null);
  }

  private writeStatus(message: string | null): Promise<void> {
    const { authKey } = this.record;
    return this.serial(async () => {
      if (this.signal.aborted) return;
      try {
        const out = await this.port.setStatus({ fence: this.fence(), message });
        if (out.decision === 'APPLY_TRANSITION' && out.record !== null) this.version = out.record.version;
        else this.stop(out.decision === 'BLOCK_EXPIRED' ? 'expired' : out.decision === 'BLOCK_STALE_VERSION' ? 'lease lost' : 'cancelled');
      } catch (error) {
        this.logger.emit('run:statusNotStored', { err: coerceError(error) });
        const r = (await this.port.lookup({ auth: authKey, taskId: this.taskId }).catch(() => null))?.record;
        if (r && r.version === this.version + 1 && r.leaseOwner === this.lease.owner && r.statusMessage === message) this.version = r.version;
      }
    });
  }

  /**
   * Asks the store, now, whether this run still holds the task, and throws the abort reason if
   * not. Until the store answers: an unreachable store confirms nothing, and past our lease the
   * task is someone else's, so the run stops without writing (another attempt follows).
   */
  async checkpoint(): Promise<void> {
    let holds: boolean | null = null;
    for (let retry = 0; holds === null; retry++) {
      try {
        holds = await this.serial(() => this.renew());
      } catch (error) {
        const pause = retryPause(retry, this.port.now(), this.leaseUntil);
        if (pause === null) {
          this.stop('lease lost');
          break;
        }
        this.logger.emit('run:checkpointRetry', { err: coerceError(error), retry });
        await sleep(pause);
      }
    }
    if (holds === false) {
      const found = await this.port.lookup({ auth: this.record.authKey, taskId: this.taskId }).catch(() => null);
      // A read that failed says nothing of the task: the fence is lost, no more.
      this.stop(found === null ? 'lease lost' : found.record === null ? 'expired' : isTerminal(found.record.status) ? 'cancelled' : 'lease lost');
    }
    this.signal.throwIfAborted();
  }

  /**
   * The handler asks its requestor. The n-th ask of a run is the n-th ask of every run of the
   * task: when it was asked before and answered, the stored answers come back at once; when it
   * is new, the questions are stored with a fenced write (the task goes `input_required`) and
   * the run suspends: its handler is stopped, its lease given back, and the answer that leaves
   * nothing outstanding makes the task claimable again. A run that asks something other than
   * what its task asked before ends the task failed. `timeoutMs` gives each new question a
   * deadline; a question asked before keeps the one it was stored with.
   */
  async ask(requests: Record<string, InputRequest>, options: AskOptions = {}): Promise<Record<string, unknown>> {
    const seq = this.asks++;
    const keys = Object.keys(requests);
    const position = await this.steps.askPosition(keys, seq);
    const before = (await this.storedInputs()).filter((q) => q.askSeq === seq);
    if (before.length > 0) {
      const same = before.length === keys.length && before.every((q) => requests[q.key] !== undefined && q.requestDigest === jcsSha256(requests[q.key]));
      if (!same) {
        throw new ProtocolError(
          JSON_RPC_CODES.internalError,
          `the tool asked something else on its re-run: ask ${seq + 1} was ${before.map((q) => q.key).join(', ')} and is now ${keys.join(', ')}; a task's handler must ask the same questions in the same order`,
        );
      }
      if (before.every((q) => q.answeredAt !== null)) return Object.fromEntries(before.map((q) => [q.key, q.response]));
      return this.suspend();
    }
    let out: AskOutcome;
    const span = stepSpan(this.trace, 'ask', keys.join(','));
    try {
      out = await this.serial(() =>
        this.port.ask({
          fence: this.fence(),
          askSeq: seq,
          position,
          questions: keys.map((key) => ({ key, request: requests[key]! })),
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
        }),
      );
    } catch (error) {
      endStep(span, 'not stored', error);
      this.storeFailed('question not stored', error);
    }
    endStep(span, out.decision);
    switch (out.decision) {
      case 'APPLY_ASK':
        if (out.record !== null) this.version = out.record.version;
        return this.suspend();
      case 'BLOCK_INPUT_KEY_REUSED':
        throw new ProtocolError(
          JSON_RPC_CODES.internalError,
          `input key ${keys.join(', ')} was asked before in this task: keys are unique for a task's lifetime`,
        );
      case 'BLOCK_STALE_VERSION':
        this.stop('lease lost');
        break;
      case 'BLOCK_TERMINAL_REWRITE':
        this.stop('cancelled');
        break;
      default:
        this.stop('expired');
    }
    this.signal.throwIfAborted();
    throw new Error(`ask refused: ${out.decision}`);
  }

  /**
   * A store call of the run failed. A store fault stops the run (`store unavailable`): the task
   * is run again once the store is back, and the handler, whatever it makes of the error, stores
   * nothing (the executor writes no terminal outcome for a stopped run). Any other error reaches
   * the handler as a message of ours: the store's own text (a driver's, naming the database's
   * address) is logged, never stored as the task's outcome.
   */
  storeFailed(what: string, error: unknown): never {
    this.logger.emit('run:storeFailed', { what, err: coerceError(error) });
    if (isStoreFault(error)) {
      this.stop('store unavailable');
      throw this.signal.reason as Error;
    }
    throw new Error(`${what}: the store refused it`);
  }

  /** The task's stored questions, read once per run (asks and steps both consult them). */
  storedInputs(): Promise<StoredInput[]> {
    // A failed read is not kept: the next ask or step reads again.
    this.asked ??= this.port.lookupInputs({ auth: this.record.authKey, taskId: this.taskId }).catch((error: unknown) => {
      this.asked = null;
      throw error;
    });
    return this.asked;
  }

  /**
   * Stops the handler while its task waits, without a worker: for answers, or (`wakeAt`) for a
   * sleep or a retry's wait the suspend write already made the task due for. Never returns.
   */
  suspend(wakeAt?: number): never {
    if (wakeAt !== undefined && this.stopped === null) this.wakeAt = wakeAt;
    this.stop('suspended');
    throw this.signal.reason as Error;
  }

  /** The outcome to store: a result over the size bound is replaced by an error that says so (the task ends failed). */
  private bounded(outcome: ToolResult | StoredError): ToolResult | StoredError {
    const bytes = jsonBytes(outcome);
    const limit = this.port.limits.maxResultBytes;
    if (bytes <= limit) return outcome;
    this.logger.emit('run:resultTooLarge', { bytes, limit });
    return { error: { code: JSON_RPC_CODES.internalError, message: `the task's result is ${bytes} bytes; at most ${limit} bytes are stored` } };
  }

  /** Gives the lease back (draining), so another worker claims the task at once. */
  release(): Promise<boolean> {
    return this.serial(() => this.port.release({ fence: this.fence() })).catch(() => false);
  }

  /**
   * The terminal write, with the only retry that is safe: after reading the stored fact. A tool
   * result ends the task `completed`, or `failed` when it is an `isError` result (the stored
   * status is the 2025-11-25 reading; the result keeps `isError` for wires that read it
   * otherwise); a JSON-RPC error ends it `failed` with the error as its outcome.
   */
  writeTerminal(outcome: ToolResult | StoredError): Promise<void> {
    return this.serial(() => this.terminalWrite(outcome));
  }

  private async terminalWrite(outcome: ToolResult | StoredError): Promise<void> {
    const { taskId, authKey } = this.record;
    let result = this.bounded(outcome);
    let replaced = false;
    await writeOfUnknownFate({
      what: 'terminal',
      attempt: async () => {
        try {
          return await this.terminalAttempt(result);
        } catch (error) {
          // The store refused the outcome itself (text it cannot keep: a NUL, an unpaired
          // surrogate), before writing anything: every run would make it again, so the task ends
          // failed saying why, instead of being run again for ever. The refusal names the field,
          // never the text.
          if (!isTasklatchError(error, 'INVALID_INPUT') || replaced) throw error;
          this.logger.emit('run:resultUnstorable', { err: error });
          result = { error: { code: JSON_RPC_CODES.internalError, message: `the task's result cannot be stored: ${error.message}` } };
          replaced = true;
          return this.terminalAttempt(result);
        }
      },
      // Written again only while the record is still working at our version: the write did not
      // land and no one else has taken the task. Anything else settles it.
      stored: async () => {
        const found = await this.port.lookup({ auth: authKey, taskId });
        return found.record === null || isTerminal(found.record.status) || found.record.version !== this.version ? true : null;
      },
      now: () => this.port.now(),
      leaseUntil: () => this.leaseUntil,
      logger: this.logger,
    });
  }

  /** One terminal write: `completed`, or `failed` for an error; a throw leaves its fate unknown. */
  private async terminalAttempt(result: ToolResult | StoredError): Promise<true> {
    const status = 'error' in result || result.isError === true ? 'failed' : 'completed';
    // A message the handler did not set in this run (a wait's, an earlier run's) does not outlive the task.
    const write = Object.assign({ fence: this.fence(), result }, this.message.own ? {} : { statusMessage: null });
    const out = status === 'completed' ? await this.port.complete(write) : await this.port.fail(write);
    const applied = out.decision === 'APPLY_TRANSITION' || out.decision === 'IDEMPOTENT_TERMINAL';
    this.ended = applied ? status : 'refused';
    if (!applied) this.logger.emit('run:terminalRefused', { decision: out.decision, stored: out.record?.status ?? null });
    return true;
  }
}
