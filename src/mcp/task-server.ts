import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { TaskCapabilities } from '../core/types.js';
import { ExpirySweeper } from '../service/expiry-sweeper.js';
import { TaskService } from '../service/task-service.js';
import type { TaskLimits } from '../service/limits.js';
import type { TaskStore } from '../store/types.js';
import type { ExecutionHooks } from '../worker/task-executor.js';
import { Worker, type WorkerOptions } from '../worker/worker.js';
import { createLogger, type Logger } from './log.js';
import { registerTaskHandlers, type SessionContext } from './handlers.js';
import { ToolRegistry } from './tool-registry.js';
import { invalidParams } from './wire.js';
import type { Principal, TaskTool } from './tool.js';

/** Resolves the caller of one request; null when the request carries no auth context. */
export type Authenticate = (request: { authInfo?: { token: string; extra?: Record<string, unknown> } | undefined }) => Principal | null | Promise<Principal | null>;

export interface TaskServerOptions {
  store: TaskStore;
  tools: readonly TaskTool[];
  /**
   * Maps a request to its principal. Without it every caller shares one anonymous context:
   * ids stay unguessable, and `tasks/list` is not offered.
   */
  authenticate?: Authenticate;
  limits?: Partial<TaskLimits>;
  /**
   * Run admitted tasks in this process with an in-process worker (default true). False: only
   * admit and answer; `tasklatch worker` processes run the tasks.
   */
  execute?: boolean;
  /** Options of the in-process worker. */
  worker?: Omit<WorkerOptions, 'hooks'> & Pick<ExecutionHooks, 'beforeTerminalWrite'>;
  /** How long `close()` lets running tasks finish before giving their leases back (ms, default 10000). */
  drainMs?: number;
  /** How often expired records are deleted (ms; default 60000; 0 turns the sweeper off). */
  sweepIntervalMs?: number;
  name?: string;
  version?: string;
  clock?: () => number;
  logger?: Logger;
}

/** The principal of callers without an auth context. */
export const ANONYMOUS: Principal = { tenant: 'anonymous', subject: 'anonymous' };

/**
 * tasklatch on the MCP wire: the SDK's low-level `Server` with our own handlers for
 * `tools/list`, `tools/call` and `tasks/*`, over the task service and its store. One
 * `TaskServer` serves any number of sessions (`connect()` per transport).
 */
export class TaskServer {
  readonly service: TaskService;
  /** The in-process worker, or null when separate worker processes run the tasks. */
  readonly worker: Worker | null;
  readonly tools: ToolRegistry;
  readonly capabilities: TaskCapabilities;
  readonly logger: Logger;
  private readonly options: TaskServerOptions;
  private readonly sessions = new Map<Server, SessionContext>();
  private readonly sweeper: ExpirySweeper | null;

  constructor(options: TaskServerOptions) {
    this.options = options;
    this.tools = new ToolRegistry(options.tools);
    this.logger = options.logger ?? createLogger();
    this.capabilities = {
      ...(options.authenticate === undefined ? {} : { list: {} }),
      cancel: {},
      ...(this.tools.anyTaskSupport ? { requests: { tools: { call: {} } } } : {}),
    };
    this.service = new TaskService({
      store: options.store,
      capabilities: this.capabilities,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    });
    const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
    this.sweeper =
      sweepIntervalMs > 0
        ? new ExpirySweeper(options.store, () => this.service.now(), {
            intervalMs: sweepIntervalMs,
            onError: (error) => this.logger.warn({ err: error }, 'expiry sweep failed'),
          })
        : null;
    const { beforeTerminalWrite, ...workerOptions } = options.worker ?? {};
    this.worker =
      options.execute === false
        ? null
        : new Worker(this.service, this.tools, {
            ...workerOptions,
            hooks: {
              log: (level, message, fields) => this.logger[level](fields ?? {}, message),
              progress: (record, progress, total, message) => this.sendProgress(record.taskId, progress, total, message),
              ...(beforeTerminalWrite === undefined ? {} : { beforeTerminalWrite }),
            },
          });
  }

  /** Starts listening for other processes' changes (stores that notify). */
  async start(): Promise<void> {
    await this.service.start((error) => this.logger.warn({ err: error }, 'change notifications interrupted; reconnecting'));
    this.sweeper?.start();
    this.worker?.start();
    if (this.options.authenticate === undefined) {
      this.logger.warn('no authentication configured: every caller shares one anonymous context and tasks/list is not offered');
    }
  }

  /**
   * A new SDK `Server` for one session. `principal` is the session's caller when the transport
   * itself identifies it (stdio with --principal); per-request auth info wins over it.
   */
  createSession(principal: Principal | null = null): Server {
    const server = new Server(
      { name: this.options.name ?? 'tasklatch', version: this.options.version ?? '0.1.0' },
      { capabilities: { tools: {}, tasks: { ...this.capabilities } } },
    );
    const session: SessionContext = {
      server: this,
      sdk: server,
      principal,
      progressTokens: new Map(),
      watches: new Map(),
    };
    // Requests are validated here, not by the SDK: its parse failures answer -32603, where a
    // malformed request (a missing task id, a cursor that is not a string) is invalid params.
    // And the SDK's Server wraps tools/call to check result shapes by `params.task`; a call with
    // `params.task` that this server must run as a plain call (no task capability) would be
    // refused by that check, so tools/call is installed at the protocol level.
    registerTaskHandlers(session, (schema, handler) => {
      const method = (schema as unknown as { shape: { method: { value: string } } }).shape.method.value;
      const envelope = z.looseObject({ method: z.literal(method), params: z.unknown().optional() });
      const checked = async (request: unknown, extra: Parameters<typeof handler>[1]) => {
        const parsed = (schema as unknown as z.ZodType).safeParse(request);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw invalidParams(`Invalid params for ${method}: ${issue === undefined ? 'malformed' : `${issue.path.join('.')}: ${issue.message}`}`);
        }
        return handler(parsed.data as never, extra);
      };
      if (schema === CallToolRequestSchema) Protocol.prototype.setRequestHandler.call(server, envelope, checked as never);
      else server.setRequestHandler(envelope, checked as never);
    });
    server.onclose = () => {
      for (const stop of session.watches.values()) stop();
      session.watches.clear();
      this.sessions.delete(server);
    };
    this.sessions.set(server, session);
    return server;
  }

  /** Resolves the caller of a request in a session. */
  async principalFor(session: SessionContext, authInfo: { token: string; extra?: Record<string, unknown> } | undefined): Promise<Principal> {
    if (this.options.authenticate !== undefined) {
      const principal = await this.options.authenticate({ authInfo });
      if (principal !== null) return principal;
    }
    return session.principal ?? ANONYMOUS;
  }

  /** Stops: no new claims, running tasks drain (then their leases go back), sessions close. */
  async close(): Promise<void> {
    await this.sweeper?.stop();
    await this.worker?.stop(this.options.drainMs ?? 10_000);
    await Promise.allSettled([...this.sessions.keys()].map((s) => s.close()));
    await this.service.stop();
  }

  private async sendProgress(taskId: string, progress: number, total?: number, message?: string): Promise<void> {
    for (const [server, session] of this.sessions) {
      const token = session.progressTokens.get(taskId);
      if (token === undefined) continue;
      await server
        .notification({ method: 'notifications/progress', params: { progressToken: token, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) } })
        .catch(() => undefined);
    }
  }
}

/** Builds a task server; see `TaskServerOptions`. */
export function createTaskServer(options: TaskServerOptions): TaskServer {
  return new TaskServer(options);
}
