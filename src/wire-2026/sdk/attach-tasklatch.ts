import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { JSON_RPC_CODES } from '../../core/json-rpc-codes.js';
import { TASKS_EXTENSION } from '../../core/meta-keys.js';
import type { Logger } from '../../runtime/log.js';
import { createRuntime, type RuntimeOptions, type TaskRuntime } from '../../runtime/task-runtime.js';
import { principalFromAuthInfo } from '../../tools/auth-info.js';
import type { TaskLimits } from '../../runtime/requests/host.js';
import { methodNotFound } from '../protocol.js';
import { StatelessServer } from '../server.js';
import type { TaskStore } from '../../store/types.js';
import { acceptedPrincipal, ANONYMOUS, type Principal } from '../../tools/principal.js';
import { ProtocolError } from '../../tools/protocol-error.js';
import { ToolRegistry } from '../../tools/tool-registry.js';
import {
  checkAttachableV2,
  checkSdkV2,
  putRequestHandler,
  refuse,
  registeredV2Tools,
  requestOf,
  servesModernEra,
  takeRequestHandler,
  type V2Context,
  type V2Handler,
} from './sdk-internals.js';
import { taskToolFromV2 } from './sdk-tool.js';

/** The caller of a request from its auth context (`ctx.http.authInfo`); null: anonymous. */
export type ResolveV2Principal = (authInfo: { clientId?: string; extra?: Record<string, unknown> } | undefined) => Principal | null;

export interface AttachV2Options {
  /** A tasklatch store; every server and worker process of the fleet opens the same one. */
  store: TaskStore;
  /** The `registerTool` tools that run as durable tasks, and how: `required` or `optional`. */
  tasks: Readonly<Record<string, 'required' | 'optional'>>;
  /** The caller of a request from its auth context (default: `principalFromAuthInfo` of `tasklatch/sdk`). */
  principal?: ResolveV2Principal;
  /** Run tasks in this process too (default true); false: only `tasklatchWorkerV2` processes run them. */
  execute?: boolean;
  /** Options of the worker, e.g. `leaseMs`: how long a task run by a process that died stays its own. */
  worker?: RuntimeOptions['worker'];
  limits?: Partial<TaskLimits>;
  logger?: Logger;
}

const TASK_METHODS = ['tasks/get', 'tasks/update', 'tasks/cancel'] as const;
const ANY_PARAMS = { params: z.looseObject({}) };

/**
 * tasklatch under a user's `@modelcontextprotocol/server` 2.x `McpServer`: one runtime (service,
 * sweeper, worker) whose tools are the server's marked `registerTool` tools. `attach` serves them
 * on a per-request `McpServer` (as `createMcpHandler`'s factory builds them): on 2026-07-28 with
 * the tasks extension their calls become durable tasks and `tasks/get|update|cancel` are
 * answered from the store, through the same 2026-07-28 wire as `tasklatch serve`; every other
 * tool, resource, prompt and handler stays as the SDK serves it.
 */
export class SdkV2Tasklatch {
  readonly runtime: TaskRuntime;
  private readonly wire: StatelessServer;
  private readonly marked: ReadonlyMap<string, 'required' | 'optional'>;
  private readonly principal: ResolveV2Principal;

  constructor(source: McpServer, options: AttachV2Options) {
    checkSdkV2(source);
    this.marked = new Map(Object.entries(options.tasks));
    if (this.marked.size === 0) throw refuse('no tool is marked as a task tool (options.tasks)');
    const tools = registeredV2Tools(source);
    const taskTools = [...this.marked].map(([name, support]) => {
      if (support !== 'required' && support !== 'optional')
        throw refuse(`tool ${name} is marked ${JSON.stringify(support)}; expected "required" or "optional"`);
      const tool = tools.get(name);
      if (tool === undefined) throw refuse(`no tool ${name} is registered on this server`);
      return taskToolFromV2(name, tool, support);
    });
    const { principal = principalFromAuthInfo, store, execute, worker, limits, logger } = options;
    this.principal = principal;
    this.runtime = createRuntime({
      store,
      tools: new ToolRegistry(taskTools),
      ...(execute === undefined ? {} : { execute }),
      ...(worker === undefined ? {} : { worker }),
      ...(limits === undefined ? {} : { limits }),
      ...(logger === undefined ? {} : { logger }),
    });
    this.wire = new StatelessServer(this.runtime);
  }

  /**
   * Serves the marked tools and `tasks/*` on `mcpServer`, built with the same tools, before it
   * serves anything (in `createMcpHandler`'s factory); returns it.
   */
  attach(mcpServer: McpServer): McpServer {
    checkAttachableV2(mcpServer);
    const tools = registeredV2Tools(mcpServer);
    for (const name of this.marked.keys()) if (!tools.has(name)) throw refuse(`no tool ${name} is registered on this server`);
    mcpServer.server.registerCapabilities({ extensions: { [TASKS_EXTENSION]: {} } });
    const sdkCall = takeRequestHandler(mcpServer, 'tools/call');
    const call: V2Handler = async (request, ctx) => {
      const name = request.params?.name;
      // The SDK's own handler answers every tool that is not a task tool, exactly as before.
      if (typeof name !== 'string' || !this.marked.has(name)) {
        if (sdkCall === undefined) throw methodNotFound('tools/call');
        return sdkCall(request, ctx);
      }
      if (!servesModernEra(mcpServer))
        throw new ProtocolError(
          JSON_RPC_CODES.invalidRequest,
          `Tool ${name} runs as a task on protocol revision 2026-07-28 only; 2025-11-25 tasks are served through tasklatch/sdk`,
        );
      return this.serve('tools/call', request, ctx);
    };
    putRequestHandler(mcpServer, 'tools/call', call);
    for (const method of TASK_METHODS) {
      const handler = async (params: Record<string, unknown>, ctx: V2Context) => {
        if (!servesModernEra(mcpServer)) throw methodNotFound(method);
        return this.serve(method, { params }, ctx);
      };
      // The explicit schemas make tasks/get and tasks/cancel the extension's methods, which the
      // SDK's era gate lets through on 2026-07-28 (it answers them method not found otherwise).
      (mcpServer.server.setRequestHandler as (method: string, schemas: unknown, handler: unknown) => void)(method, ANY_PARAMS, handler);
    }
    return mcpServer;
  }

  /** Starts the runtime: change notifications, the sweeper and (unless turned off) the worker. */
  async start(): Promise<void> {
    await this.runtime.start();
  }

  /** Stops: running tasks drain, then their leases go back. The store stays open (it is the caller's). */
  async close(): Promise<void> {
    await this.runtime.close();
  }

  /** One request through tasklatch's 2026-07-28 wire: the same decisions as `tasklatch serve`. */
  private serve(method: string, request: { params?: Record<string, unknown> }, ctx: V2Context): Promise<Record<string, unknown>> {
    const { id, params, headers, authInfo, signal } = requestOf(request, ctx);
    // Refused before the wire sees it: a malformed identity never reaches the store (invalid request).
    const principal = acceptedPrincipal(this.principal(authInfo as Parameters<ResolveV2Principal>[0])) ?? ANONYMOUS;
    return this.wire.dispatch(method, { id, params, headers, principal, signal });
  }
}

/**
 * Attaches tasklatch to a user's `@modelcontextprotocol/server` 2.x `McpServer`: the tools named
 * in `options.tasks` (registered with `registerTool`) run as durable 2026-07-28 tasks through
 * tasklatch's admission, guard, workers and store. Call it on a server with the tools
 * registered; `start()` the result, and `attach()` each per-request server the factory builds.
 */
export function attachTasklatchV2(mcpServer: McpServer, options: AttachV2Options): SdkV2Tasklatch {
  const tasklatch = new SdkV2Tasklatch(mcpServer, options);
  tasklatch.attach(mcpServer);
  return tasklatch;
}

/**
 * A worker process for the same server module: the callbacks of `mcpServer`'s marked tools,
 * run from the store's outbox beside any number of server processes. Start it, close it on SIGTERM.
 */
export function tasklatchWorkerV2(mcpServer: McpServer, options: Omit<AttachV2Options, 'execute'>): SdkV2Tasklatch {
  return new SdkV2Tasklatch(mcpServer, Object.assign({}, options, { execute: true }));
}
