import type { IncomingHttpHeaders } from 'node:http';
import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';
import { META_KEYS, TASKS_EXTENSION } from '../core/meta-keys.js';
import { outlast, readTask } from '../runtime/requestor-reads.js';
import { answerProblem } from '../service/answer-check.js';
import { isPlausibleTaskId } from '../service/input-bounds.js';
import { isStoreFault, isTasklatchError } from '../core/errors.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import { outstanding } from '../core/input-rules.js';
import { isAnswerTo } from '../tools/asking.js';
import { authKeyOf, type Principal } from '../tools/principal.js';
import { ProtocolError } from '../tools/protocol-error.js';
import { checkRoutingHeaders } from './headers.js';
import { describeIssue, Envelope, ListenParams, RequestMeta, TaskIdParams, UpdateTaskParams } from './messages.js';
import { declaresTasks, invalidParams, methodNotFound, missingTasksExtension, SUPPORTED_VERSIONS } from './protocol.js';
import { storeUnavailable } from '../tools/protocol-error.js';
import { acceptedTaskIds, openTaskSubscription, SubscriptionSlots, type EventSink } from './subscriptions.js';
import { errorReply, readableId, type StatelessReply } from './replies.js';

export type { StatelessReply } from './replies.js';
import { plainEnvelope, plainMeta, plainTaskId, type PlainMeta } from './plain-request.js';
import { detailedTask } from '../tools/task-views.js';
import { withoutExecution, type Call } from './plain-context.js';
import { callTool } from './tool-call.js';

/** One POSTed message, with what the HTTP layer knows about it. */
export interface StatelessRequest {
  body: unknown;
  headers: IncomingHttpHeaders;
  /** The caller, as the HTTP layer authenticated it (the anonymous principal without auth). */
  principal: Principal;
  /** Fires when the client goes away. */
  signal: AbortSignal;
}

export interface StatelessOptions {
  name?: string;
  version?: string;
  /** How long clients may cache `server/discover` and the list results (ms). */
  listTtlMs?: number;
}

/** A reply that is not a JSON result: the SSE stream of a subscription. */
class StreamReply {
  readonly kind = 'stream';
  constructor(
    readonly open: (sink: EventSink, closed: AbortSignal) => Promise<void>,
    /** Gives back what the stream holds when it is never opened. */
    readonly drop: () => void,
  ) {}
}

type Handler = (call: Call) => Promise<Record<string, unknown> | StreamReply>;

/**
 * A call of one POSTed request. Its signal is read from the request when a handler needs it (the
 * HTTP layer makes it on first use), by a getter of this class: an object literal with a getter
 * makes a hidden class of its own per request, which kept each request's objects alive past
 * young-generation collections.
 */
class RequestCall implements Call {
  readonly principal: Principal;
  readonly headers: IncomingHttpHeaders;

  constructor(
    readonly id: string | number,
    readonly params: Record<string, unknown>,
    readonly capabilities: Record<string, unknown>,
    private readonly request: StatelessRequest,
  ) {
    this.principal = request.principal;
    this.headers = request.headers;
  }

  get signal(): AbortSignal {
    return this.request.signal;
  }
}

const TASK_NOT_FOUND = 'Task not found';

/**
 * tasklatch on the MCP 2026-07-28 wire with the tasks extension: every request stands alone,
 * carrying its protocol version and client capabilities in `_meta`; there are no sessions.
 * Like the 2025-11-25 wire, it only maps the runtime's decisions to messages: the same service,
 * store, tools and workers answer both, so a task created on either is readable on both.
 */
export class StatelessServer {
  /** A Map: a client's method name is never looked up on a plain object. */
  private readonly methods: ReadonlyMap<string, Handler>;
  private readonly listTtlMs: number;
  private readonly subscriptions: SubscriptionSlots;

  constructor(
    private readonly runtime: TaskRuntime,
    private readonly options: StatelessOptions = {},
  ) {
    this.listTtlMs = options.listTtlMs ?? 60_000;
    this.subscriptions = new SubscriptionSlots(runtime.guard.context.limits);
    const cache = () => ({ ttlMs: this.listTtlMs, cacheScope: 'public' });
    this.methods = new Map(
      Object.entries({
        'server/discover': async () => this.discover(),
        'tools/list': async () => ({ resultType: 'complete', tools: this.runtime.tools.list().map(withoutExecution), ...cache() }),
        // A tools-only server: the lists exist, empty, so that clients and caches need no special case.
        'prompts/list': async () => ({ resultType: 'complete', prompts: [], ...cache() }),
        'resources/list': async () => ({ resultType: 'complete', resources: [], ...cache() }),
        'resources/templates/list': async () => ({ resultType: 'complete', resourceTemplates: [], ...cache() }),
        'resources/read': async () => Promise.reject(invalidParams('Resource not found')),
        'prompts/get': async () => Promise.reject(invalidParams('Prompt not found')),
        'tools/call': (call) => callTool(this.runtime, call),
        'tasks/get': (call) => this.getTask(call),
        'tasks/update': (call) => this.updateTask(call),
        'tasks/cancel': (call) => this.cancelTask(call),
        'subscriptions/listen': (call) => this.listen(call),
      } satisfies Record<string, Handler>),
    );
  }

  /** Answers one POSTed message. Never throws: every failure is a JSON-RPC error reply. */
  async handle(request: StatelessRequest): Promise<StatelessReply> {
    if (Array.isArray(request.body))
      return errorReply(undefined, new ProtocolError(JSON_RPC_CODES.invalidRequest, 'a POST carries one JSON-RPC message; batches are not part of 2026-07-28'));
    const envelope = plainEnvelope(request.body) ?? Envelope.safeParse(request.body);
    if ('success' in envelope && !envelope.success)
      return errorReply(readableId(request.body), new ProtocolError(JSON_RPC_CODES.invalidRequest, `Invalid request: ${describeIssue(envelope.error)}`));
    const { id, method, params: given = {} } = 'success' in envelope ? envelope.data : envelope;
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      return id === undefined ? { kind: 'accepted' } : errorReply(id, invalidParams(`Invalid params for ${method.slice(0, 60)}: params must be an object`));
    }
    const params = given as Record<string, unknown>;
    // Notifications need no answer; the one a client sends here (cancelling a listen) is also
    // told by the stream it closes.
    if (id === undefined) return { kind: 'accepted' };
    try {
      const { version, capabilities } = requestMeta(params._meta);
      checkRoutingHeaders(request.headers, method, params, version);
      const result = await this.serve(method, version, new RequestCall(id, params, capabilities, request));
      if (result instanceof StreamReply) return result;
      return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id, result } };
    } catch (error) {
      return errorReply(id, this.protocolErrorOf(error, method));
    }
  }

  /**
   * One request of a host that parsed the envelope and checked the routing headers itself (an
   * SDK's own 2026-07-28 HTTP entry): the same methods and decisions as `handle`, with the
   * result returned and every failure thrown as the `ProtocolError` to answer. `params` are the
   * request's params as sent, `_meta` included. Subscriptions are the host's own.
   */
  async dispatch(
    method: string,
    request: Omit<StatelessRequest, 'body'> & { id: string | number; params: Record<string, unknown> },
  ): Promise<Record<string, unknown>> {
    try {
      const { version, capabilities } = requestMeta(request.params._meta);
      const { id, params, principal, headers, signal } = request;
      const result = await this.serve(method, version, { id, params, capabilities, principal, headers, signal });
      if (result instanceof StreamReply) {
        result.drop();
        throw methodNotFound(method);
      }
      return result;
    } catch (error) {
      throw this.protocolErrorOf(error, method);
    }
  }

  private async serve(method: string, version: string, call: Call): Promise<Record<string, unknown> | StreamReply> {
    if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
      throw new ProtocolError(JSON_RPC_CODES.unsupportedVersion, `Unsupported protocol version ${version}`, {
        supported: [...SUPPORTED_VERSIONS],
        requested: version,
      });
    }
    const handler = this.methods.get(method);
    if (handler === undefined) throw methodNotFound(method);
    return handler(call);
  }

  /** The error a failed request answers: its own, invalid params for refused input, else a logged internal error. */
  private protocolErrorOf(error: unknown, method: string): ProtocolError {
    if (error instanceof ProtocolError) return error;
    if (isTasklatchError(error, 'INVALID_INPUT')) return invalidParams(error.message);
    // An outage, not a fault of this server: one line without a stack, and an answer to retry.
    if (isStoreFault(error)) {
      this.runtime.logger.warn({ reason: (error as Error).message, method }, 'store unavailable');
      return storeUnavailable();
    }
    this.runtime.logger.error({ err: error, method }, 'request failed');
    return new ProtocolError(JSON_RPC_CODES.internalError, 'Internal error');
  }

  private discover(): Record<string, unknown> {
    return {
      resultType: 'complete',
      supportedVersions: [...SUPPORTED_VERSIONS],
      capabilities: { tools: {}, prompts: {}, resources: {}, extensions: { [TASKS_EXTENSION]: {} } },
      ttlMs: this.listTtlMs,
      cacheScope: 'public',
      _meta: { [META_KEYS.serverInfo]: { name: this.options.name ?? 'tasklatch', version: this.options.version ?? '0.1.0' } },
    };
  }

  private async getTask(call: Call): Promise<Record<string, unknown>> {
    const taskId = this.taskIdOf(call, 'tasks/get');
    const auth = authKeyOf(call.principal);
    // Bounded: a record seeded input_required without questions stays so, and is shown so.
    for (let attempt = 1; ; attempt += 1) {
      const out = await readTask(this.runtime.guard, { auth, method: 'tasks/get', taskId });
      if (out.record === null) throw invalidParams(TASK_NOT_FOUND);
      const view = detailedTask(out.record);
      if (out.record.status !== 'input_required') return view;
      // Every outstanding question, as the extension asks: a partial answer leaves the rest.
      const asked = outstanding(await outlast(this.runtime.guard.context, () => this.runtime.guard.answers.lookupInputs({ auth, taskId }), call.signal));
      // None left: the last answer landed between the two reads and the task moved on (the
      // answer and the status change are one write); the record read again says to what.
      if (asked.length === 0 && attempt < 3) continue;
      view.inputRequests = Object.fromEntries(asked.map((q) => [q.key, q.request]));
      return view;
    }
  }

  /**
   * Answers to a task's questions. Keys that are not outstanding (unknown, answered, of a task
   * that moved on) are ignored, as the extension asks; an answer of the wrong shape for an
   * outstanding question is refused. The answers are stored before the ack, so the next
   * tasks/get already shows what is left.
   */
  private async updateTask(call: Call): Promise<Record<string, unknown>> {
    if (!declaresTasks(call.capabilities)) throw missingTasksExtension('tasks/update');
    const parsed = UpdateTaskParams.safeParse(call.params);
    if (!parsed.success) throw invalidParams(`Invalid params for tasks/update: ${describeIssue(parsed.error)}`);
    const { taskId, inputResponses } = parsed.data;
    if (!isPlausibleTaskId(taskId)) throw invalidParams(TASK_NOT_FOUND);
    const auth = authKeyOf(call.principal);
    const found = await this.runtime.guard.answers.inputs({ auth, taskId });
    if (found.inputs === null) {
      // A miss, audited as a read's is: unknown, another caller's or expired, told apart here only.
      await this.runtime.guard.requestor.recordDecision({ surface: 'input', decision: found.decision, auth, taskId, detail: 'tasks/update', read: true });
      throw invalidParams(TASK_NOT_FOUND);
    }
    const pending = new Map(outstanding(found.inputs).map((q) => [q.key, q]));
    const responses: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (const [key, response] of Object.entries(inputResponses)) {
      const question = pending.get(key);
      if (question === undefined) continue;
      if (!isAnswerTo(question.request, response)) throw invalidParams(`inputResponses.${key} is not an answer to ${question.request.method}`);
      // Every answer is checked before any is stored: one refused answer stores none.
      const problem = answerProblem(key, question.request, response, this.runtime.guard.context.limits.maxAnswerBytes);
      if (problem !== null) throw invalidParams(`Invalid inputResponses: ${problem}`);
      responses[key] = response;
    }
    if (Object.keys(responses).length > 0) await this.runtime.guard.answers.answer({ auth, taskId, responses });
    return { resultType: 'complete' };
  }

  /** Cooperative: the cancellation is latched (or the task was already terminal); the ack is empty either way. */
  private async cancelTask(call: Call): Promise<Record<string, unknown>> {
    const taskId = this.taskIdOf(call, 'tasks/cancel');
    const out = await this.runtime.cancel({ auth: authKeyOf(call.principal), taskId });
    if (out.record === null) throw invalidParams(TASK_NOT_FOUND);
    return { resultType: 'complete' };
  }

  private async listen(call: Call): Promise<StreamReply> {
    const parsed = ListenParams.safeParse(call.params);
    if (!parsed.success) throw invalidParams(`Invalid params for subscriptions/listen: ${describeIssue(parsed.error)}`);
    const taskIds = parsed.data.notifications.taskIds ?? [];
    if (taskIds.length > 0 && !declaresTasks(call.capabilities)) throw missingTasksExtension('Task subscriptions');
    const most = this.runtime.guard.context.limits.maxListenTaskIds;
    if (taskIds.length > most) throw invalidParams(`Invalid params for subscriptions/listen: ${taskIds.length} task ids; at most ${most} per listen`);
    const auth = authKeyOf(call.principal);
    const release = this.subscriptions.take(auth);
    // Read before the stream opens: a store that stays away is a 503 to retry, not an empty ack.
    const accepted = await acceptedTaskIds(this.runtime.guard, auth, taskIds, call.signal).catch((error: unknown) => {
      release();
      throw error;
    });
    const open = async (sink: EventSink, closed: AbortSignal) => {
      try {
        await openTaskSubscription({ guard: this.runtime.guard, auth, accepted, subscriptionId: call.id, sink, closed });
      } finally {
        release();
      }
    };
    return new StreamReply(open, release);
  }

  /** The extension check comes before the id is looked at: a non-declaring request learns nothing. */
  private taskIdOf(call: Call, method: string): string {
    if (!declaresTasks(call.capabilities)) throw missingTasksExtension(method);
    const taskId = plainTaskId(call.params) ?? TaskIdParams.safeParse(call.params);
    if (typeof taskId !== 'string' && !taskId.success) throw invalidParams(`Invalid params for ${method}: ${describeIssue(taskId.error)}`);
    const id = typeof taskId === 'string' ? taskId : taskId.data.taskId;
    // An id no store could hold is no one's task: answered as unknown, without a lookup.
    if (!isPlausibleTaskId(id)) throw invalidParams(TASK_NOT_FOUND);
    return id;
  }
}

/** The request's `_meta`: the plain shape checked by hand, anything else by the schema. */
function requestMeta(meta: unknown): PlainMeta {
  const plain = plainMeta(meta);
  if (plain !== null) return plain;
  const parsed = RequestMeta.safeParse(meta);
  if (!parsed.success) throw invalidParams(`Invalid _meta: ${describeIssue(parsed.error)}`);
  return { version: parsed.data[META_KEYS.protocolVersion], capabilities: parsed.data[META_KEYS.clientCapabilities] };
}
