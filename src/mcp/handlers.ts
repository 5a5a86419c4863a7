import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AnyObjectSchema } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  type ProgressToken,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { idempotencyKeyOf, isAugmented, taskSupportOf } from '../core/create-rules.js';
import { taskFollowUp } from '../runtime/task-tools.js';
import { isTasklatchError } from '../core/errors.js';
import { isTerminal, type TaskRecord, type WireRequest } from '../core/types.js';
import { visibleTo } from '../core/read-rules.js';
import { askingContext } from '../tools/asking.js';
import { plainStep } from '../tools/plain-step.js';
import { argumentProblem, invokeTool } from '../tools/invoke-tool.js';
import { checkCallInput, isPlausibleTaskId } from '../service/input-bounds.js';
import { questionDelivery, sessionAsk } from './input-delivery.js';
import { authKeyOf, type Principal } from '../tools/principal.js';
import { PREPARED_META, type TaskTool, type ToolContext, type ToolResult } from '../tools/tool.js';
import type { TaskServer } from './task-server.js';
import { invalidParams, methodNotFound, taskNotFound, TOO_MANY_TASKS, wireResult, wireTask, WireError } from './wire.js';

const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

/** Per-session state: the session's own principal, progress tokens and status watches. */
export interface SessionContext {
  server: TaskServer;
  sdk: Server;
  principal: Principal | null;
  /** taskId → the progressToken of the request that created it (this session only). */
  progressTokens: Map<string, ProgressToken>;
  /** taskId → stops the status-notification watch. */
  watches: Map<string, () => void>;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
/** Installs one request handler on the session's SDK server. */
export type Register = (schema: AnyObjectSchema, handler: (request: never, extra: Extra) => Promise<unknown>) => void;

/** Installs tools/list, tools/call and the tasks/* handlers on one session. */
export function registerTaskHandlers(session: SessionContext, register: Register): void {
  const { server } = session;
  const auth = async (extra: Extra) => authKeyOf(await server.principalFor(session, extra.authInfo));

  register(ListToolsRequestSchema, async () => ({ tools: listedTools(session) }));

  register(CallToolRequestSchema, (request: { params: Record<string, unknown> & { name: string } }, extra) => callTool(session, request.params, extra));

  register(GetTaskRequestSchema, async (request: { params: { taskId: string } }, extra) => {
    plausible(request.params.taskId);
    const out = await server.service.read({ auth: await auth(extra), method: 'tasks/get', taskId: request.params.taskId });
    if (out.record === null) throw taskNotFound();
    return wireTask(out.record);
  });

  register(GetTaskPayloadRequestSchema, async (request: { params: { taskId: string } }, extra) => {
    plausible(request.params.taskId);
    const caller = await auth(extra);
    const onWaitInput = questionDelivery({ service: server.service, auth: caller, extra, logger: server.logger });
    const out = await server.service.awaitResult({ auth: caller, taskId: request.params.taskId, signal: extra.signal, onWaitInput });
    if (out.record === null) throw taskNotFound();
    if (out.decision !== 'RETURN_RESULT') throw invalidParams('the request was abandoned before the task finished');
    return wireResult(out.record);
  });

  if (server.capabilities.cancel !== undefined) {
    register(CancelTaskRequestSchema, async (request: { params: { taskId: string } }, extra) => {
      plausible(request.params.taskId);
      // Stored before this reply; the runtime stops the handler wherever it runs.
      const out = await server.runtime.cancel({ auth: await auth(extra), taskId: request.params.taskId });
      if (out.decision === 'BLOCK_CAPABILITY') throw methodNotFound('tasks/cancel is not supported');
      if (out.record === null) throw taskNotFound();
      if (out.decision === 'ALREADY_TERMINAL') throw invalidParams(`Task ${out.record.taskId} is already ${out.record.status} and cannot be cancelled`);
      return wireTask(out.record);
    });
  }

  if (server.capabilities.list !== undefined) {
    register(ListTasksRequestSchema, async (request: { params?: { cursor?: string } }, extra) => {
      try {
        const out = await server.service.list({ auth: await auth(extra), cursor: request.params?.cursor });
        if (out.decision === 'BLOCK_CAPABILITY') throw methodNotFound('tasks/list is not supported');
        return { tasks: out.records.map(wireTask), ...(out.nextCursor === null ? {} : { nextCursor: out.nextCursor }) };
      } catch (error) {
        if (isTasklatchError(error, 'INVALID_CURSOR')) throw invalidParams('Invalid cursor');
        throw error;
      }
    });
  }
}

async function callTool(session: SessionContext, params: Record<string, unknown> & { name: string }, extra: Extra): Promise<unknown> {
  const { server } = session;
  const principal = await server.principalFor(session, extra.authInfo);
  const tool = typeof params.name === 'string' ? server.tools.get(params.name) : undefined;
  if (tool === undefined) throw invalidParams(`Unknown tool: ${String(params.name)}`);
  // The session's client capabilities go into the stored request, as a 2026-07-28 request
  // carries its own: a worker in any process then knows what the task may ask its requestor.
  const clientCapabilities = (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined) ?? {};
  const meta = (params._meta as Record<string, unknown> | undefined) ?? {};
  const stored: Record<string, unknown> & { _meta: Record<string, unknown> } = {
    ...params,
    _meta: { [CLIENT_CAPABILITIES_META]: clientCapabilities, ...meta },
  };
  // A client that declared no task support, calling a `required` tool with the task tools on:
  // the call is admitted as a task and answered with a text that names it.
  const followUp = server.runtime.taskTools && clientCapabilities.tasks === undefined && taskSupportOf(tool) === 'required';
  if (followUp && !isAugmented({ method: 'tools/call', params })) stored.task = {};
  const request: WireRequest = { method: 'tools/call', params: stored };
  const headerKey = headerValue(extra, 'idempotency-key');
  try {
    checkCallInput(params, headerKey, server.service.limits.maxArgumentBytes);
  } catch (error) {
    if (isTasklatchError(error, 'INVALID_INPUT')) throw invalidParams(error.message);
    throw error;
  }
  // Arguments of a task call are checked before its record exists; the worker parses them again.
  // A tool's `prepare` asks what it must before the task exists, within this call; what it
  // returns is stored with the task.
  const parseArgs = async () => {
    const problem = argumentProblem(tool, params.arguments);
    if (problem !== null) throw invalidParams(problem);
    if (tool.prepare !== undefined) {
      const prepared = await tool.prepare(tool.inputSchema.parse(params.arguments ?? {}), plainContext(session, principal, extra));
      stored._meta = { ...stored._meta, [PREPARED_META]: prepared };
    }
  };
  let outcome;
  try {
    outcome = await server.service.create({
      auth: authKeyOf(principal),
      tool: server.tools.descriptor(tool),
      request,
      idempotencyKey: headerKey,
      beforeAdmit: parseArgs,
    });
  } catch (error) {
    if (isTasklatchError(error, 'INVALID_INPUT')) throw invalidParams(error.message);
    throw error;
  }
  switch (outcome.decision) {
    case 'BLOCK_TASK_FORBIDDEN':
      throw methodNotFound(`Tool ${tool.name} does not support task-augmented calls`);
    case 'BLOCK_TASK_REQUIRED':
      throw methodNotFound(`Tool ${tool.name} must be called as a task (params.task)`);
    case 'BLOCK_IDEMPOTENCY_COLLISION':
      throw invalidParams(`Idempotency key ${JSON.stringify(idempotencyKeyOf(request) ?? headerKey)} is already used by a different request`);
    case 'BLOCK_TASK_LIMIT':
      throw new WireError(TOO_MANY_TASKS, `Too many active tasks: at most ${server.service.limits.maxActiveTasks ?? 0} non-terminal tasks per caller`);
    case 'BLOCK_STORED_LIMIT':
      throw new WireError(
        TOO_MANY_TASKS,
        `Too many stored tasks: at most ${server.service.limits.maxStoredTasks ?? 0} unexpired tasks per caller, finished ones included`,
      );
    case 'ACCEPT_NORMAL':
    case 'BLOCK_CAPABILITY':
      return runPlain(session, tool, params, principal, extra);
    case 'REPLAY_TASK':
      return followUp ? taskFollowUp(outcome.record) : { task: wireTask(outcome.record) };
    case 'ACCEPT_TASK': {
      const record = outcome.record;
      if (followUp) return taskFollowUp(record);
      const token = extra._meta?.progressToken;
      if (token !== undefined) session.progressTokens.set(record.taskId, token);
      watchStatus(session, record.taskId, authKeyOf(principal), record.version);
      return { task: wireTask(record) };
    }
  }
}

/**
 * `tools/list` of one session. With the task tools on, a client that declared no task support
 * sees its `required` tools without `execution`: such a client calls them plainly (SDK clients
 * refuse, before sending, a plain call of a tool listed `required`) and gets the task as text.
 */
function listedTools(session: SessionContext): Array<Record<string, unknown>> {
  const tools = session.server.tools.list();
  const capabilities = session.sdk.getClientCapabilities() as Record<string, unknown> | undefined;
  if (!session.server.runtime.taskTools || capabilities?.tasks !== undefined) return tools;
  return tools.map((tool) => ((tool.execution as { taskSupport?: string } | undefined)?.taskSupport === 'required' ? { ...tool, execution: undefined } : tool));
}

/** A plain call: the same handler, run inline, its result returned as is. */
async function runPlain(session: SessionContext, tool: TaskTool, params: Record<string, unknown>, principal: Principal, extra: Extra): Promise<ToolResult> {
  return invokeTool(tool, params.arguments, plainContext(session, principal, extra));
}

/** A plain call's context: it runs within the request, and asks the client within it too. */
function plainContext(session: SessionContext, principal: Principal, extra: Extra): ToolContext {
  const token = extra._meta?.progressToken;
  const capabilities = (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined) ?? null;
  const idempotencyKey = `call:${randomUUID()}`;
  return {
    ...askingContext(sessionAsk(extra, session.server.service.limits.maxAnswerBytes), capabilities),
    taskId: null,
    principal,
    signal: extra.signal,
    idempotencyKey,
    step: plainStep(extra.signal, idempotencyKey),
    clientCapabilities: capabilities,
    reportStatus: async () => undefined,
    checkpoint: async () => extra.signal.throwIfAborted(),
    reportProgress: async (progress, total, message) => {
      if (token === undefined) return;
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) },
      });
    },
  };
}

/** Sends notifications/tasks/status to this session on every change of a task it created. */
function watchStatus(session: SessionContext, taskId: string, authKey: string, createdVersion: number): void {
  const { server } = session;
  // The requestor has the task as created; only later versions are news.
  let lastVersion = createdVersion;
  // A change this process wrote carries its record: no read for it (the caller's own, unexpired).
  const onChange = async (carried: TaskRecord | undefined) => {
    const own = carried !== undefined && visibleTo(carried, authKey, server.service.now());
    const found = own ? { record: carried } : await server.service.lookup({ auth: authKey, taskId });
    if (found.record === null) return stop();
    if (found.record.version <= lastVersion) return;
    lastVersion = found.record.version;
    await session.sdk.notification({ method: 'notifications/tasks/status', params: wireTask(found.record) });
    if (isTerminal(found.record.status)) stop();
  };
  const unsubscribe = server.service.changes.subscribe(taskId, (version, record) => {
    if (version !== undefined && version <= lastVersion) return;
    onChange(record).catch(() => undefined);
  });
  const stop = () => {
    unsubscribe();
    session.watches.delete(taskId);
    session.progressTokens.delete(taskId);
  };
  session.watches.set(taskId, stop);
}

/** An id no store could hold (too long, a NUL, an unpaired surrogate) is no one's task: answered as unknown, without a lookup. */
function plausible(taskId: string): void {
  if (!isPlausibleTaskId(taskId)) throw taskNotFound();
}

function headerValue(extra: Extra, name: string): string | null {
  const value = extra.requestInfo?.headers[name];
  if (Array.isArray(value)) return value[0] ?? null;
  return typeof value === 'string' ? value : null;
}
