import { randomUUID } from 'node:crypto';
import { isTerminal, type TaskRecord, type WireRequest } from '../core/types.js';
import type { ToolRegistry } from '../mcp/tool-registry.js';
import type { Principal, ToolContext, ToolResult } from '../mcp/tool.js';
import type { TaskService } from '../service/task-service.js';

/** Where an executor reports what it cannot return: progress for a requestor, and its own log. */
export interface ExecutionHooks {
  progress?(record: TaskRecord, progress: number, total?: number, message?: string): Promise<void>;
  log?(level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void;
}

/** `tenant/subject` back to a principal (the tenant never contains a slash). */
export function principalOf(authKey: string): Principal {
  const slash = authKey.indexOf('/');
  return slash < 0 ? { tenant: authKey, subject: '' } : { tenant: authKey.slice(0, slash), subject: authKey.slice(slash + 1) };
}

/**
 * Runs admitted tasks: one tool handler per task, with an AbortSignal that fires on
 * cancellation (seen through the change feed, in whichever process it was written), on expiry and
 * on shutdown. Every status write names the version this executor last wrote; a refused write is
 * classified by the store, never retried blindly, so a cancelled or expired task keeps its fact.
 */
export class TaskExecutor {
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private stopping = false;

  constructor(
    private readonly service: TaskService,
    private readonly tools: ToolRegistry,
    private readonly hooks: ExecutionHooks = {},
  ) {}

  /** Number of handlers running now. */
  get active(): number {
    return this.running.size;
  }

  /** Starts the task's handler; resolves when its terminal write (or refusal) is done. */
  execute(record: TaskRecord): Promise<void> {
    const existing = this.running.get(record.taskId);
    if (existing !== undefined) return existing.done;
    const controller = new AbortController();
    const done = this.run(record, controller).finally(() => this.running.delete(record.taskId));
    this.running.set(record.taskId, { controller, done });
    return done;
  }

  /** Aborts a running handler (cancellation seen by this process). */
  abort(taskId: string, reason: string): void {
    this.running.get(taskId)?.controller.abort(new Error(reason));
  }

  /** Aborts every handler and waits for them to settle. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const { controller } of this.running.values()) controller.abort(new Error('server shutting down'));
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  private async run(record: TaskRecord, controller: AbortController): Promise<void> {
    const { taskId, authKey } = record;
    let version = record.version;
    const stopWatching = this.watchForCancellation(record, controller);
    const expiryTimer =
      record.expiresAt === null ? null : setTimeout(() => controller.abort(new Error('task expired')), Math.max(0, record.expiresAt - this.service.now()));
    try {
      const ctx: ToolContext = {
        taskId,
        principal: principalOf(authKey),
        signal: controller.signal,
        idempotencyKey: `task:${taskId}`,
        reportStatus: async (message) => {
          const out = await this.service.transition({ auth: authKey, taskId, write: { status: 'working', expectedVersion: version, statusMessage: message } });
          if (out.decision === 'APPLY_TRANSITION' && out.record !== null) version = out.record.version;
          else if (out.decision !== 'BLOCK_STALE_VERSION') controller.abort(new Error(`task is ${out.record?.status ?? 'gone'}`));
        },
        reportProgress: async (progress, total, message) => {
          if (!controller.signal.aborted) await this.hooks.progress?.(record, progress, total, message);
        },
      };
      const result = await this.invoke(record, ctx);
      // A handler stopped by shutdown has not finished: its task stays open for recovery, it does
      // not fail.
      if (this.stopping) return;
      const status = result.isError === true ? 'failed' : 'completed';
      const out = await this.service.transition({ auth: authKey, taskId, write: { status, expectedVersion: version, result }, correlationId: randomUUID() });
      if (out.decision !== 'APPLY_TRANSITION' && out.decision !== 'IDEMPOTENT_TERMINAL') {
        this.hooks.log?.('info', 'task result not stored', { taskId, decision: out.decision, stored: out.record?.status ?? null });
      }
    } finally {
      stopWatching();
      if (expiryTimer !== null) clearTimeout(expiryTimer);
    }
  }

  private async invoke(record: TaskRecord, ctx: ToolContext): Promise<ToolResult> {
    const request = record.request as WireRequest | null;
    const tool = record.toolName === null ? undefined : this.tools.get(record.toolName);
    if (tool === undefined || request === null) {
      return errorResult(`tool ${record.toolName ?? '(none)'} is not served here`);
    }
    const parsed = tool.inputSchema.safeParse(request.params.arguments ?? {});
    if (!parsed.success) return errorResult(`invalid arguments: ${parsed.error.message}`);
    try {
      return await tool.handler(parsed.data, ctx);
    } catch (error) {
      this.hooks.log?.('warn', 'tool handler threw', { taskId: record.taskId, error: (error as Error).message });
      return errorResult(ctx.signal.aborted ? `aborted: ${String((ctx.signal.reason as Error | undefined)?.message)}` : (error as Error).message);
    }
  }

  /** Aborts the handler once the stored record is terminal (cancelled elsewhere) or gone. */
  private watchForCancellation(record: TaskRecord, controller: AbortController): () => void {
    const check = async () => {
      const found = await this.service.store.get(record.authKey, record.taskId, this.service.now());
      if (found.record === null || isTerminal(found.record.status)) {
        controller.abort(new Error(found.record === null ? 'task expired' : `task ${found.record.status}`));
      }
    };
    const onChange = () => void check().catch(() => undefined);
    const unsubscribe = this.service.changes.subscribe(record.taskId, onChange);
    // Stores whose other processes cannot notify this one are checked at the poll interval.
    const poll = this.service.store.supports.shared && this.service.store.listen === undefined
      ? setInterval(onChange, record.pollInterval ?? this.service.limits.pollInterval)
      : null;
    return () => {
      unsubscribe();
      if (poll !== null) clearInterval(poll);
    };
  }
}

export function errorResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
