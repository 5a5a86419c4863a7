import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type ListToolsResult } from '@modelcontextprotocol/sdk/types.js';
import { TasklatchError } from '../../core/errors.js';
import { checkedHandler, createTaskServer, methodOf, type TaskServer } from '../server.js';
import type { Logger } from '../../runtime/log.js';
import { createRuntime, type RuntimeOptions, type TaskRuntime } from '../../runtime/task-runtime.js';
import { TASK_TOOL_NAMES } from '../../runtime/task-tools.js';
import type { TaskLimits } from '../../runtime/requests/host.js';
import type { TaskStore } from '../../store/types.js';
import { ToolRegistry } from '../../tools/tool-registry.js';
import { principalFromAuthInfo, type ResolvePrincipal } from './request-auth.js';
import { checkAttachable, checkSdk, registeredTools, takeRequestHandler } from './sdk-internals.js';
import { taskToolFrom } from './sdk-tool.js';

export interface AttachOptions {
  /** A tasklatch store; every server and worker process of the fleet opens the same one. */
  store: TaskStore;
  /**
   * The application these tools belong to (default `'default'`; see `RuntimeOptions.app`): give
   * the server and its `tasklatchWorker` processes the same name, and every other application on
   * the same store another.
   */
  app?: string;
  /** The `registerTool` tools that run as durable tasks, and how: `required` or `optional`. */
  tasks: Readonly<Record<string, 'required' | 'optional'>>;
  /** The caller of a request from its auth context (default: `principalFromAuthInfo`). */
  principal?: ResolvePrincipal;
  /** Whether callers are identified (an auth context on every request): only then is tasks/list offered. */
  callersIdentified?: boolean;
  /** Run tasks in this process too (default true); false: only `tasklatchWorker` processes run them. */
  execute?: boolean;
  worker?: RuntimeOptions['worker'];
  limits?: Partial<TaskLimits>;
  /** `task_status`, `task_result`, `task_cancel` for clients without tasks (see `RuntimeOptions.taskTools`). */
  taskTools?: boolean;
  logger?: Logger;
}

/**
 * tasklatch under a user's `McpServer`: one runtime (service, sweeper, worker) whose tools are the
 * server's marked `registerTool` tools. `attach` serves them on an `McpServer` (one per session,
 * as the SDK builds them): their calls become durable tasks, `tasks/*` are tasklatch's, and
 * every other tool, resource, prompt and handler of the server stays as the SDK serves it.
 */
export class SdkTasklatch {
  readonly runtime: TaskRuntime;
  readonly server: TaskServer;
  private readonly marked: ReadonlyMap<string, 'required' | 'optional'>;

  constructor(source: McpServer, options: AttachOptions) {
    checkSdk(source);
    this.marked = new Map(Object.entries(options.tasks));
    if (this.marked.size === 0) throw new TasklatchError('INVALID_INPUT', 'cannot attach tasklatch: no tool is marked as a task tool (options.tasks)');
    const tools = registeredTools(source);
    const taskTools = [...this.marked].map(([name, support]) => {
      const tool = tools.get(name);
      if (support !== 'required' && support !== 'optional')
        throw new TasklatchError(
          'INVALID_INPUT',
          `cannot attach tasklatch: tool ${name} is marked ${JSON.stringify(support)}; expected "required" or "optional"`,
        );
      if (tool === undefined) throw new TasklatchError('INVALID_INPUT', `cannot attach tasklatch: no tool ${name} is registered on this server`);
      return taskToolFrom(name, tool, support);
    });
    const { principal = principalFromAuthInfo, callersIdentified = false, store, app, execute, worker, limits, taskTools: withTaskTools, logger } = options;
    this.runtime = createRuntime({
      store,
      ...(app === undefined ? {} : { app }),
      tools: new ToolRegistry(taskTools),
      callersIdentified,
      ...(execute === undefined ? {} : { execute }),
      ...(worker === undefined ? {} : { worker }),
      ...(limits === undefined ? {} : { limits }),
      ...(withTaskTools === undefined ? {} : { taskTools: withTaskTools }),
      ...(logger === undefined ? {} : { logger }),
    });
    this.server = createTaskServer({ runtime: this.runtime, authenticate: ({ authInfo }) => principal(authInfo as never) });
  }

  /** Serves the marked tools and `tasks/*` on `mcpServer` (before it connects); returns it. */
  attach(mcpServer: McpServer): McpServer {
    checkAttachable(mcpServer);
    const tools = registeredTools(mcpServer);
    for (const name of this.marked.keys()) {
      if (!tools.has(name)) throw new TasklatchError('INVALID_INPUT', `cannot attach tasklatch: no tool ${name} is registered on this server`);
    }
    const low = mcpServer.server;
    low.registerCapabilities({ tasks: { ...this.runtime.capabilities } });
    const sdkList = takeRequestHandler(low, 'tools/list') as ((request: unknown, extra: unknown) => Promise<ListToolsResult>) | undefined;
    const sdkCall = takeRequestHandler(low, 'tools/call') as ((request: unknown, extra: unknown) => Promise<unknown>) | undefined;
    const ours = (name: unknown) => typeof name === 'string' && this.runtime.tools.get(name) !== undefined;
    this.server.adoptSession(low, null, (schema, handler) => {
      const method = methodOf(schema);
      const checked = checkedHandler(schema, handler, this.server.logger);
      if (method === 'tools/list') {
        low.setRequestHandler(ListToolsRequestSchema, async (request, extra) =>
          this.listTools(low, sdkList === undefined ? { tools: [] } : await sdkList(request, extra)),
        );
      } else if (method === 'tools/call') {
        low.setRequestHandler(
          CallToolRequestSchema,
          async (request, extra) =>
            // The SDK's own handler answers every tool that is not a task tool, exactly as before.
            (ours(request.params.name) ? checked(request, extra) : sdkCall!(request, extra)) as never,
        );
      } else {
        low.setRequestHandler(schema as never, checked as never);
      }
    });
    return mcpServer;
  }

  /** Starts the runtime: change notifications, the sweeper and (unless turned off) the worker. */
  async start(): Promise<void> {
    await this.runtime.start();
    await this.server.start();
  }

  /** Stops: running tasks drain, then their leases go back. The store stays open (it is the caller's). */
  async close(): Promise<void> {
    await this.server.close();
    await this.runtime.close();
  }

  /** The SDK's list, with the task tools' `execution`, and the follow-up tools when they are on. */
  private listTools(low: McpServer['server'], listed: ListToolsResult): ListToolsResult {
    const plainClient = this.runtime.taskTools && low.getClientCapabilities()?.tasks === undefined;
    const tools = listed.tools.map((tool) => {
      const support = this.marked.get(tool.name);
      if (support === undefined) return tool;
      // A client without tasks calls a required tool plainly and gets the task as text.
      return plainClient && support === 'required'
        ? Object.assign({}, tool, { execution: undefined })
        : Object.assign({}, tool, { execution: Object.assign({}, tool.execution, { taskSupport: support }) });
    });
    if (!this.runtime.taskTools) return Object.assign({}, listed, { tools });
    const followUp = new ToolRegistry(TASK_TOOL_NAMES.map((name) => this.runtime.tools.get(name)!)).list() as ListToolsResult['tools'];
    return Object.assign({}, listed, { tools: [...tools, ...followUp] });
  }
}

/**
 * Attaches tasklatch to a user's SDK `McpServer` in one call: the tools named in `options.tasks`
 * (registered with `registerTool`) run as durable tasks through tasklatch's admission, guard,
 * workers and store. Call it after the tools are registered and before `connect`; then
 * `start()` the result. More sessions' servers: `attach()` each on the same result.
 */
export function attachTasklatch(mcpServer: McpServer, options: AttachOptions): SdkTasklatch {
  const tasklatch = new SdkTasklatch(mcpServer, options);
  tasklatch.attach(mcpServer);
  return tasklatch;
}

/**
 * A worker process for the same server module: the handlers of `mcpServer`'s marked tools,
 * run from the store's outbox beside any number of server processes. Start it, close it on SIGTERM.
 */
export function tasklatchWorker(mcpServer: McpServer, options: Omit<AttachOptions, 'execute' | 'taskTools'>): SdkTasklatch {
  return new SdkTasklatch(mcpServer, Object.assign({}, options, { execute: true }));
}
