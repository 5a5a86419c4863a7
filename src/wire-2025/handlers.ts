import { randomUUID } from 'node:crypto';
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { isAugmented } from '../core/create-rules.js';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS } from '../core/meta-keys.js';
import { taskFollowUp } from '../runtime/task-tools.js';
import type { CallOutcome } from '../runtime/requests/call-tool.js';
import { isTasklatchError } from '../core/errors.js';
import { isTerminal, type TaskRecord } from '../core/types.js';
import { visibleTo } from '../core/visibility.js';
import { askingContext } from '../tools/asking.js';
import { awaitTaskResult, listTasks, readTask } from '../runtime/requestor-reads.js';
import { isPlausibleTaskId } from '../service/input-bounds.js';
import { plainStep } from '../tools/plain-step.js';
import { questionDelivery, sessionAsk } from './input-delivery.js';
import { authKeyOf, type Principal } from '../tools/principal.js';
import type { ToolContext } from '../tools/tool.js';
import type { Extra, Register, SessionContext } from './session.js';
import { invalidParams, methodNotFound, taskNotFound, wireResult, wireTask, WireError } from './wire.js';

export type { Register, SessionContext, SessionHost } from './session.js';

/** Installs tools/list, tools/call and the tasks/* handlers on one session. */
export function registerTaskHandlers(session: SessionContext, register: Register): void {
  const { server } = session;
  const { guard, capabilities } = server.runtime;
  const auth = async (extra: Extra) => authKeyOf(await server.principalFor(session, extra.authInfo));

  register(ListToolsRequestSchema, async () => ({ tools: listedTools(session) }));

  register(CallToolRequestSchema, (request: { params: Record<string, unknown> & { name: string } }, extra) => callTool(session, request.params, extra));

  register(GetTaskRequestSchema, async (request: { params: { taskId: string } }, extra) => {
    plausible(request.params.taskId);
    const out = await readTask(guard, { auth: await auth(extra), method: 'tasks/get', taskId: request.params.taskId });
    if (out.record === null) throw taskNotFound();
    return wireTask(out.record);
  });

  register(GetTaskPayloadRequestSchema, async (request: { params: { taskId: string } }, extra) => {
    plausible(request.params.taskId);
    const caller = await auth(extra);
    const onWaitInput = questionDelivery({ guard, auth: caller, extra, logger: server.logger });
    const out = await awaitTaskResult(guard, { auth: caller, taskId: request.params.taskId, signal: extra.signal, onWaitInput });
    if (out.record === null) throw taskNotFound();
    if (out.decision !== 'RETURN_RESULT') throw invalidParams('the request was abandoned before the task finished');
    return wireResult(out.record);
  });

  if (capabilities.cancel !== undefined) {
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

  if (capabilities.list !== undefined) {
    register(ListTasksRequestSchema, async (request: { params?: { cursor?: string } }, extra) => {
      try {
        const out = await listTasks(guard, { auth: await auth(extra), cursor: request.params?.cursor });
        if (out.decision === 'BLOCK_CAPABILITY') throw methodNotFound('tasks/list is not supported');
        return { tasks: out.records.map(wireTask), ...(out.nextCursor === null ? {} : { nextCursor: out.nextCursor }) };
      } catch (error) {
        if (isTasklatchError(error, 'INVALID_CURSOR')) throw invalidParams('Invalid cursor');
        throw error;
      }
    });
  }
}

/**
 * `tools/call` on this session: the runtime's one call path (`TaskRuntime.callTool`), told
 * whether the call asks for a task (`params.task`) and whether the session's client takes
 * tasks at all; the outcome mapped to this generation's messages.
 */
async function callTool(session: SessionContext, params: Record<string, unknown> & { name: string }, extra: Extra): Promise<unknown> {
  const { runtime } = session.server;
  const principal = await session.server.principalFor(session, extra.authInfo);
  const clientCapabilities = (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined) ?? {};
  const meta = (params._meta as Record<string, unknown> | undefined) ?? {};
  const outcome = await runtime.callTool({
    principal,
    params,
    // The session's client capabilities go into the stored request, as a 2026-07-28 request
    // carries its own: a worker in any process then knows what the task may ask its requestor.
    stored: Object.assign({}, params, { _meta: { [META_KEYS.clientCapabilities]: clientCapabilities, ...meta } }),
    headerKey: headerValue(extra, 'idempotency-key'),
    asks: isAugmented({ method: 'tools/call', params }) ? 'requested' : 'none',
    clientTakesTasks: clientCapabilities.tasks !== undefined,
    context: () => plainContext(session, principal, extra),
    plainContext: true,
  });
  return answerCall(session, outcome, principal, extra);
}

/** A call's outcome as this generation answers it. */
function answerCall(session: SessionContext, outcome: CallOutcome, principal: Principal, extra: Extra): unknown {
  switch (outcome.kind) {
    case 'invalid':
      throw invalidParams(outcome.message);
    case 'result':
      return outcome.result;
    case 'input':
      // A session call asks its client within the call (`sessionAsk`); nothing here asks by rounds.
      throw outcome.needed;
    case 'refused':
      throw refusalError(outcome);
    case 'task': {
      const { record } = outcome;
      if (outcome.followUp) return taskFollowUp(record);
      if (outcome.decision === 'ACCEPT_TASK') {
        const token = extra._meta?.progressToken;
        if (token !== undefined) session.progressTokens.set(record.taskId, token);
        watchStatus(session, record.taskId, authKeyOf(principal), record.version);
      }
      return { task: wireTask(record) };
    }
  }
}

/** A refused call's JSON-RPC error on this generation: a task asked wrongly is method not found, as the 2025-11-25 spec says. */
function refusalError(outcome: Extract<CallOutcome, { kind: 'refused' }>): WireError {
  switch (outcome.decision) {
    case 'BLOCK_TASK_FORBIDDEN':
      return methodNotFound(outcome.message);
    case 'BLOCK_TASK_REQUIRED':
      return methodNotFound(`${outcome.message} (params.task)`);
    case 'BLOCK_IDEMPOTENCY_COLLISION':
      return invalidParams(outcome.message);
    case 'BLOCK_TASK_LIMIT':
    case 'BLOCK_STORED_LIMIT':
      return new WireError(JSON_RPC_CODES.tooManyTasks, outcome.message);
  }
}

/**
 * `tools/list` of one session. With the task tools on, a client that declared no task support
 * sees its `required` tools without `execution`: such a client calls them plainly (SDK clients
 * refuse, before sending, a plain call of a tool listed `required`) and gets the task as text.
 */
function listedTools(session: SessionContext): Array<Record<string, unknown>> {
  const tools = session.server.runtime.tools.list();
  const capabilities = session.sdk.getClientCapabilities() as Record<string, unknown> | undefined;
  if (!session.server.runtime.taskTools || capabilities?.tasks !== undefined) return tools;
  return tools.map((tool) =>
    (tool.execution as { taskSupport?: string } | undefined)?.taskSupport === 'required' ? Object.assign({}, tool, { execution: undefined }) : tool,
  );
}

/** A plain call's context: it runs within the request, and asks the client within it too. */
function plainContext(session: SessionContext, principal: Principal, extra: Extra): ToolContext {
  const token = extra._meta?.progressToken;
  const capabilities = (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined) ?? null;
  const idempotencyKey = `call:${randomUUID()}`;
  // Object.assign onto the asking part, not a spread followed by properties (V8's slow path on Node 20).
  return Object.assign(askingContext(sessionAsk(extra, session.server.runtime.guard.context.limits.maxAnswerBytes), capabilities), {
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
  } satisfies Partial<ToolContext>);
}

/** Sends notifications/tasks/status to this session on every change of a task it created. */
function watchStatus(session: SessionContext, taskId: string, authKey: string, createdVersion: number): void {
  const { guard } = session.server.runtime;
  // The requestor has the task as created; only later versions are news.
  let lastVersion = createdVersion;
  // A change that carries its record (this process's own, another's terminal one): no read for it (the caller's own, unexpired).
  const onChange = async (carried: TaskRecord | undefined) => {
    const own = carried !== undefined && visibleTo(carried, authKey, guard.context.clock());
    const found = own ? { record: carried } : await guard.worker.lookup({ auth: authKey, taskId });
    if (found.record === null) return stop();
    if (found.record.version <= lastVersion) return;
    lastVersion = found.record.version;
    await session.sdk.notification({ method: 'notifications/tasks/status', params: wireTask(found.record) });
    if (isTerminal(found.record.status)) stop();
  };
  const unsubscribe = guard.context.changes.subscribe(taskId, (version, record) => {
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
