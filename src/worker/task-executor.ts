import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { isTerminal, type TaskRecord, type WireRequest } from '../core/types.js';
import type { ToolRegistry } from '../mcp/tool-registry.js';
import type { Principal, ToolContext, ToolResult } from '../mcp/tool.js';
import type { TaskService } from '../service/task-service.js';
import type { Fence } from '../store/types.js';

/** Where an executor reports what it cannot return, and where a test may step in. */
export interface ExecutionHooks {
  progress?: (record: TaskRecord, progress: number, total?: number, message?: string) => Promise<void>;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** Runs after the handler returned and before its terminal write (fault injection). */
  beforeTerminalWrite?: (record: TaskRecord) => void | Promise<void>;
}

/** The lease a worker holds on a claimed task. */
export interface Lease {
  owner: string;
  leaseMs: number;
  /** How often the lease is renewed; also how soon a cancellation written elsewhere is seen. */
  heartbeatMs: number;
}

/** `tenant/subject` back to a principal (the tenant never contains a slash). */
export function principalOf(authKey: string): Principal {
  const slash = authKey.indexOf('/');
  return slash < 0 ? { tenant: authKey, subject: '' } : { tenant: authKey.slice(0, slash), subject: authKey.slice(slash + 1) };
}

type StopReason = 'cancelled' | 'expired' | 'lease lost' | 'drained';

/** What one run knows: the version it wrote last (its fence) and why it stopped, if it did. */
interface RunState {
  version: number;
  /** Until when the lease is known to hold (claim or last successful heartbeat). */
  leaseUntil: number;
  stopped: StopReason | null;
  /** Serializes this run's writes so a heartbeat never races a status write for the version. */
  chain: Promise<unknown>;
}

/**
 * Runs claimed tasks: one tool handler per task with an AbortSignal that fires on cancellation
 * (seen through change events and heartbeats, in whichever process it was written), on expiry,
 * on losing the lease and on draining. Every write names the version this run holds; a refused
 * write is classified by the store and never retried blindly: after an error the stored fact is
 * read first, and only a record still at our version and still working is written again.
 */
export class TaskExecutor {
  private readonly running = new Map<string, { controller: AbortController; state: RunState; done: Promise<void> }>();

  constructor(
    private readonly service: TaskService,
    private readonly tools: ToolRegistry,
    private readonly hooks: ExecutionHooks = {},
  ) {}

  /** Number of handlers running now. */
  get active(): number {
    return this.running.size;
  }

  /** Runs a claimed task's handler; resolves when its terminal write (or refusal) is done. */
  execute(record: TaskRecord, lease: Lease): Promise<void> {
    const existing = this.running.get(record.taskId);
    if (existing !== undefined) {
      // This worker claimed its own task again after letting the lease lapse: the claim moved
      // the version, so the running handler carries on under the new one.
      existing.state.version = Math.max(existing.state.version, record.version);
      return existing.done;
    }
    const controller = new AbortController();
    const state: RunState = { version: record.version, leaseUntil: record.leaseExpiresAt ?? this.service.now() + lease.leaseMs, stopped: null, chain: Promise.resolve() };
    const done = this.run(record, lease, controller, state).finally(() => this.running.delete(record.taskId));
    this.running.set(record.taskId, { controller, state, done });
    return done;
  }

  /** Aborts a running handler whose task this process saw cancelled. */
  abort(taskId: string, reason: StopReason = 'cancelled'): void {
    const run = this.running.get(taskId);
    if (run === undefined) return;
    run.state.stopped ??= reason;
    run.controller.abort(new Error(`task ${reason}`));
  }

  /**
   * Lets running handlers finish for up to `timeoutMs`, then aborts the rest and gives their
   * leases back, so another worker picks them up at once instead of after the lease runs out.
   */
  async drain(timeoutMs: number): Promise<void> {
    const all = Promise.allSettled([...this.running.values()].map((r) => r.done));
    const timer = sleep(timeoutMs, 'timeout' as const);
    if ((await Promise.race([all, timer])) === 'timeout') {
      for (const taskId of this.running.keys()) this.abort(taskId, 'drained');
      await all;
    }
  }

  private async run(record: TaskRecord, lease: Lease, controller: AbortController, state: RunState): Promise<void> {
    const { taskId, authKey } = record;
    const fence = (): Fence => ({ taskId, authKey, owner: lease.owner, version: state.version });
    const serial = <T>(work: () => Promise<T>): Promise<T> => {
      const next = state.chain.then(work, work);
      state.chain = next.catch(() => undefined);
      return next;
    };
    const stop = (reason: StopReason) => {
      state.stopped ??= reason;
      controller.abort(new Error(`task ${reason}`));
    };
    const heartbeat = setInterval(() => {
      serial(() => this.renew(fence(), lease, state)).then(
        (holds) => holds || stop('lease lost'),
        (error: unknown) => this.hooks.log?.('warn', 'heartbeat failed', { taskId, error: String(error) }),
      );
    }, lease.heartbeatMs);
    const unwatch = this.service.changes.subscribe(taskId, (version) => {
      // Our own writes come back as events too; a version we wrote needs no read.
      if (version !== undefined && version <= state.version) return;
      this.service.store.get({ authKey, taskId, now: this.service.now() }).then(
        (found) => {
          if (found.record === null) stop('expired');
          else if (isTerminal(found.record.status)) stop('cancelled');
        },
        () => undefined,
      );
    });
    const untilExpiry = record.expiresAt === null ? null : Math.max(0, record.expiresAt - this.service.now());
    const expiry = untilExpiry === null ? null : setTimeout(() => stop('expired'), untilExpiry);
    let result: ToolResult;
    try {
      result = await this.invoke(record, this.context(record, lease, controller, state, serial, stop));
    } finally {
      clearInterval(heartbeat);
      unwatch();
      if (expiry !== null) clearTimeout(expiry);
    }
    if (state.stopped === 'drained') {
      await serial(() => this.service.store.release({ fence: fence(), now: this.service.now() })).catch(() => false);
      return;
    }
    if (state.stopped === 'lease lost' || state.stopped === 'expired') {
      this.hooks.log?.('info', 'task stopped without a terminal write', { taskId, reason: state.stopped });
      return;
    }
    await this.hooks.beforeTerminalWrite?.(record);
    await serial(() => this.writeTerminal(record, state, result));
  }

  private context(
    record: TaskRecord,
    { owner: leaseOwner, leaseMs }: Lease,
    controller: AbortController,
    state: RunState,
    serial: <T>(work: () => Promise<T>) => Promise<T>,
    stop: (reason: StopReason) => void,
  ): ToolContext {
    const { taskId, authKey } = record;
    return {
      taskId,
      principal: principalOf(authKey),
      signal: controller.signal,
      idempotencyKey: `task:${taskId}`,
      // A status message is best effort: a store error is logged, never thrown into the handler.
      // When the write's fate is unknown the stored fact is read, and our own write adopted.
      reportStatus: (message) =>
        serial(async () => {
          if (controller.signal.aborted) return;
          try {
            const out = await this.service.transition({ auth: authKey, taskId, write: { status: 'working', expectedVersion: state.version, statusMessage: message } });
            if (out.decision === 'APPLY_TRANSITION' && out.record !== null) state.version = out.record.version;
            else stop(out.decision === 'BLOCK_EXPIRED' ? 'expired' : out.decision === 'BLOCK_STALE_VERSION' ? 'lease lost' : 'cancelled');
          } catch (error) {
            this.hooks.log?.('warn', 'status message not stored', { taskId, error: String(error) });
            const found = await this.service.store.get({ authKey, taskId, now: this.service.now() }).catch(() => null);
            const r = found?.record;
            if (r && r.version === state.version + 1 && r.leaseOwner === leaseOwner && r.statusMessage === message) state.version = r.version;
          }
        }),
      reportProgress: async (progress, total, message) => {
        if (!controller.signal.aborted) await this.hooks.progress?.(record, progress, total, message);
      },
      checkpoint: async () => {
        const fence: Fence = { taskId, authKey, owner: leaseOwner, version: state.version };
        // Until the store answers: an unreachable store confirms nothing, and past our lease the
        // task is someone else's, so the run stops without writing (another attempt follows).
        let holds: boolean | null = null;
        for (let attempt = 0; holds === null; attempt++) {
          try {
            holds = await serial(() => this.renew(fence, { owner: leaseOwner, leaseMs, heartbeatMs: 0 }, state));
          } catch (error) {
            if (this.service.now() + 100 * 2 ** attempt >= state.leaseUntil) {
              stop('lease lost');
              break;
            }
            this.hooks.log?.('warn', 'checkpoint: store unreachable; retrying', { taskId, error: String(error) });
            await sleep(Math.min(100 * 2 ** attempt, 1000));
          }
        }
        if (holds === false) {
          const found = await this.service.store.get({ authKey, taskId, now: this.service.now() }).catch(() => null);
          stop(found === null || found.record === null ? 'expired' : isTerminal(found.record.status) ? 'cancelled' : 'lease lost');
        }
        controller.signal.throwIfAborted();
      },
    };
  }

  /** Extends the lease; true while the fence holds. */
  private async renew(fence: Fence, lease: Lease, state: RunState): Promise<boolean> {
    const now = this.service.now();
    const holds = await this.service.store.heartbeat({ fence, now, leaseMs: lease.leaseMs });
    if (holds) state.leaseUntil = now + lease.leaseMs;
    return holds;
  }

  /** The terminal write, with the only retry that is safe: after reading the stored fact. */
  private async writeTerminal(record: TaskRecord, state: RunState, result: ToolResult): Promise<void> {
    const { taskId, authKey } = record;
    const status = result.isError === true ? 'failed' : 'completed';
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await this.service.transition({ auth: authKey, taskId, write: { status, expectedVersion: state.version, result }, correlationId: randomUUID() });
        if (out.decision !== 'APPLY_TRANSITION' && out.decision !== 'IDEMPOTENT_TERMINAL') {
          this.hooks.log?.('info', 'terminal write refused', { taskId, decision: out.decision, stored: out.record?.status ?? null });
        }
        return;
      } catch (error) {
        this.hooks.log?.('warn', 'terminal write failed; reading the stored fact', { taskId, error: String(error) });
      }
      // We do not know whether the write happened. Read what is stored; write again only if
      // the record is still working at our version (the write did not land and no one else has
      // taken the task). Past our lease another worker owns the task: stop.
      for (;;) {
        await sleep(Math.min(100 * 2 ** attempt, 2000));
        if (this.service.now() > state.leaseUntil) return;
        try {
          const found = await this.service.store.get({ authKey, taskId, now: this.service.now() });
          if (found.record === null || isTerminal(found.record.status) || found.record.version !== state.version) return;
          break;
        } catch {
          attempt++;
        }
      }
    }
  }

  private async invoke(record: TaskRecord, ctx: ToolContext): Promise<ToolResult> {
    const request = record.request as WireRequest | null;
    const tool = record.toolName === null ? undefined : this.tools.get(record.toolName);
    if (tool === undefined || request === null) return errorResult(`tool ${record.toolName ?? '(none)'} is not served here`);
    const parsed = tool.inputSchema.safeParse(request.params.arguments ?? {});
    if (!parsed.success) return errorResult(`invalid arguments: ${parsed.error.message}`);
    try {
      return await tool.handler(parsed.data, ctx);
    } catch (error) {
      if (!ctx.signal.aborted) this.hooks.log?.('warn', 'tool handler threw', { taskId: record.taskId, error: (error as Error).message });
      return errorResult(ctx.signal.aborted ? `stopped: ${String((ctx.signal.reason as Error | undefined)?.message)}` : (error as Error).message);
    }
  }
}

export function errorResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
