import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { CallToolRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isStoreFault, TasklatchError } from '../core/errors.js';
import { principalProblem } from '../core/principal.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import type { Logger } from '../runtime/log.js';
import { createRuntime, TaskRuntime, type RuntimeOptions } from '../runtime/task-runtime.js';
import { acceptedPrincipal, ANONYMOUS, type Principal } from '../tools/principal.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { registerTaskHandlers } from './methods.js';
import type { Register, SessionContext, SessionHost } from './session.js';
import { invalidParams } from './encode.js';
import { storeUnavailable } from '../tools/protocol-error.js';

export { ANONYMOUS };

/** Resolves the caller of one request; null when the request carries no auth context. */
export type Authenticate = (request: {
  authInfo?: { token: string; extra?: Record<string, unknown> } | undefined;
}) => Principal | null | Promise<Principal | null>;

/** What the 2025-11-25 session wire itself needs, besides the runtime it serves. */
export interface WireOptions {
  /**
   * Maps a request to its principal. Without it every caller shares one anonymous context:
   * ids stay unguessable, and `tasks/list` is not offered.
   */
  authenticate?: Authenticate;
  name?: string;
  version?: string;
}

/**
 * A task server over a runtime of its own (built from the runtime options, closed with the
 * server) or over one the caller built and closes (`runtime`).
 */
export type TaskServerOptions = WireOptions & (RuntimeOptions | { runtime: TaskRuntime });

/**
 * tasklatch on the MCP 2025-11-25 wire: the SDK's low-level `Server` with our own handlers for
 * `tools/list`, `tools/call` and `tasks/*`, over a task runtime. One `TaskServer` serves any
 * number of sessions (`connect()` per transport); it holds the sessions and maps decisions to
 * messages, and the runtime does the rest.
 */
export class TaskServer implements SessionHost {
  readonly runtime: TaskRuntime;
  private readonly options: WireOptions;
  private readonly ownsRuntime: boolean;
  private readonly sessions = new Map<Server, SessionContext>();
  private readonly stopProgress: () => void;

  constructor(options: TaskServerOptions) {
    this.options = options;
    this.ownsRuntime = !('runtime' in options);
    this.runtime = 'runtime' in options ? options.runtime : createRuntime({ callersIdentified: options.authenticate !== undefined, ...options });
    this.stopProgress = this.runtime.onProgress((taskId, progress, total, message) => this.sendProgress(taskId, progress, total, message));
  }

  get tools() {
    return this.runtime.tools;
  }

  get capabilities() {
    return this.runtime.capabilities;
  }

  get logger(): Logger {
    return this.runtime.logger;
  }

  /** SDK servers of open sessions (one per transport connected, until it closes). */
  get openSessions(): number {
    return this.sessions.size;
  }

  /** The server's name and version, as every wire announces them. */
  get identity(): { name: string; version: string } {
    return { name: this.options.name ?? 'tasklatch', version: this.options.version ?? '0.1.0' };
  }

  /** Starts the runtime it owns (a runtime passed in is the caller's to start). */
  async start(): Promise<void> {
    if (this.ownsRuntime) await this.runtime.start();
    if (this.options.authenticate === undefined) {
      this.logger.warn('no authentication configured: every caller shares one anonymous context and tasks/list is not offered');
    }
  }

  /**
   * A new SDK `Server` for one session. `principal` is the session's caller when the transport
   * itself identifies it (stdio with --principal); per-request auth info wins over it.
   */
  createSession(principal: Principal | null = null): Server {
    const server = new Server(this.identity, { capabilities: { tools: {}, tasks: { ...this.capabilities } } });
    // Requests are validated here, not by the SDK: its parse failures answer internal error, where a
    // malformed request (a missing task id, a cursor that is not a string) is invalid params.
    // And the SDK's Server wraps tools/call to check result shapes by `params.task`; a call with
    // `params.task` that this server must run as a plain call (no task capability) would be
    // refused by that check, so tools/call is installed at the protocol level.
    this.adoptSession(server, principal, (schema, handler) => {
      const envelope = z.looseObject({ method: z.literal(methodOf(schema)), params: z.unknown().optional() });
      const checked = checkedHandler(schema, handler, this.logger);
      if (schema === CallToolRequestSchema) Protocol.prototype.setRequestHandler.call(server, envelope, checked as never);
      else server.setRequestHandler(envelope, checked as never);
    });
    return server;
  }

  /**
   * Serves this server's tools/list, tools/call and tasks/* on an SDK `Server` built elsewhere
   * (the low-level server of a user's `McpServer`), each handler installed through `register`.
   */
  adoptSession(server: Server, principal: Principal | null, register: Register): void {
    const problem = principal === null ? null : principalProblem(principal);
    if (problem !== null) throw new TasklatchError('INVALID_INPUT', `cannot serve a session as this principal: its ${problem.part} ${problem.problem}`);
    const session: SessionContext = { server: this, sdk: server, principal, progressTokens: new Map(), watches: new Map() };
    registerTaskHandlers(session, register);
    const previous = server.onclose;
    server.onclose = () => {
      previous?.();
      for (const stop of session.watches.values()) stop();
      session.watches.clear();
      this.sessions.delete(server);
    };
    this.sessions.set(server, session);
  }

  /** The state of an open session, by the SDK `Server` that serves it. */
  sessionOf(server: Server): SessionContext | undefined {
    return this.sessions.get(server);
  }

  /**
   * Resolves the caller of a request in a session. A principal from `authenticate` that fails the
   * core's check is refused (invalid request, naming the part) before the request touches the store.
   */
  async principalFor(session: SessionContext, authInfo: { token: string; extra?: Record<string, unknown> } | undefined): Promise<Principal> {
    if (this.options.authenticate !== undefined) {
      const principal = acceptedPrincipal(await this.options.authenticate({ authInfo }));
      if (principal !== null) return principal;
    }
    return session.principal ?? ANONYMOUS;
  }

  /** Stops: the runtime it owns drains (running tasks finish, then their leases go back), sessions close. */
  async close(): Promise<void> {
    this.stopProgress();
    if (this.ownsRuntime) await this.runtime.close();
    await Promise.allSettled([...this.sessions.keys()].map((s) => s.close()));
  }

  private async sendProgress(taskId: string, progress: number, total?: number, message?: string): Promise<void> {
    for (const [server, session] of this.sessions) {
      const token = session.progressTokens.get(taskId);
      if (token === undefined) continue;
      await server
        .notification({
          method: 'notifications/progress',
          params: { progressToken: token, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) },
        })
        .catch(() => undefined);
    }
  }
}

/** The method a request schema is for. */
export function methodOf(schema: unknown): string {
  return (schema as { shape: { method: { value: string } } }).shape.method.value;
}

/**
 * A handler that validates its request against `schema` first: a malformed request is answered
 * invalid params with the first issue, before the handler sees it.
 */
export function checkedHandler<Extra>(schema: unknown, handler: (request: never, extra: Extra) => Promise<unknown>, logger: Logger) {
  const method = methodOf(schema);
  return async (request: unknown, extra: Extra) => {
    const parsed = (schema as z.ZodType).safeParse(request);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw invalidParams(`Invalid params for ${method}: ${issue === undefined ? 'malformed' : `${issue.path.join('.')}: ${issue.message}`}`);
    }
    try {
      return await handler(parsed.data as never, extra);
    } catch (error) {
      throw requestFailure(error, method, logger, extra as { requestId?: unknown; sessionId?: unknown });
    }
  };
}

/**
 * What a handler's failure is answered with: a JSON-RPC error it threw as it is; a store fault
 * as the retryable `Store unavailable` (one line, no stack); anything else as internal error,
 * logged with its stack and answered without its text (which may be a database's).
 */
export function requestFailure(
  error: unknown,
  method: string,
  logger: Logger,
  request: { requestId?: unknown; sessionId?: unknown },
): ProtocolError | McpError {
  if (error instanceof ProtocolError || error instanceof McpError) return error;
  if (isStoreFault(error)) {
    logger.warn({ reason: (error as Error).message, method }, 'store unavailable');
    return storeUnavailable();
  }
  logger.error({ err: error, method, id: request.requestId, sessionId: request.sessionId }, `request failed: ${JSON_RPC_CODES.internalError}`);
  return new ProtocolError(JSON_RPC_CODES.internalError, 'Internal error');
}

/** Builds a task server; see `TaskServerOptions`. */
export function createTaskServer(options: TaskServerOptions): TaskServer {
  return new TaskServer(options);
}
