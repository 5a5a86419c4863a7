import { META_KEYS, TASKS_EXTENSION } from '../core/meta-keys.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import { answerTask } from '../runtime/requests/answer-task.js';
import { cancelTask } from '../runtime/requests/cancel-task.js';
import { getTask, ReadOfCaller } from '../runtime/requests/get-task.js';
import { listTools } from '../runtime/requests/list-tools.js';
import { acceptWatch } from '../runtime/requests/watch-tasks.js';
import { authKeyOf } from '../tools/principal.js';
import { encodeCancel, encodeTask, encodeTools, encodeUpdate } from './encode.js';
import { describeIssue, ListenParams, TaskIdParams, UpdateTaskParams } from './messages.js';
import { openTaskSubscription, type EventSink, type SubscriptionSlots } from './notifications.js';
import type { Call } from './plain-context.js';
import { plainTaskId } from './plain-request.js';
import { declaresTasks, invalidParams, missingTasksExtension, SUPPORTED_VERSIONS } from './protocol.js';
import { StreamReply } from './replies.js';
import { callTool } from './tool-call.js';

/** One method of this wire: the request's checked parts in, a JSON result or a stream out. */
export type Handler = (call: Call) => Promise<Record<string, unknown> | StreamReply>;

/** What the methods table reads of its server besides the runtime. */
export interface MethodsOptions {
  name?: string;
  version?: string;
  /** How long clients may cache `server/discover` and the list results (ms). */
  listTtlMs: number;
  /** The open subscriptions of the server (one set per server). */
  subscriptions: SubscriptionSlots;
}

/**
 * The 2026-07-28 methods: each decodes its params (a zod schema, or the hand-written check of the
 * hot path), asks the request layer (`src/runtime/requests/`, with the runtime as host) and
 * encodes the outcome (`encode.ts`). The tasks extension is checked before a task id is looked
 * at: a request that does not declare it learns nothing. A Map: a client's method name is never
 * looked up on a plain object.
 */
export function methodTable(runtime: TaskRuntime, options: MethodsOptions): ReadonlyMap<string, Handler> {
  const cache = { ttlMs: options.listTtlMs, cacheScope: 'public' };
  return new Map(
    Object.entries({
      'server/discover': async () => ({
        resultType: 'complete',
        supportedVersions: [...SUPPORTED_VERSIONS],
        capabilities: { tools: {}, prompts: {}, resources: {}, extensions: { [TASKS_EXTENSION]: {} } },
        ttlMs: options.listTtlMs,
        cacheScope: 'public',
        _meta: { [META_KEYS.serverInfo]: { name: options.name ?? 'tasklatch', version: options.version ?? '0.1.0' } },
      }),
      // One listing for every client (it is cached publicly): whether a call becomes a task is the server's.
      'tools/list': async () => encodeTools(listTools(runtime, { clientTakesTasks: false }), cache),
      // A tools-only server: the lists exist, empty, so that clients and caches need no special case.
      'prompts/list': async () => Object.assign({ resultType: 'complete', prompts: [] }, cache),
      'resources/list': async () => Object.assign({ resultType: 'complete', resources: [] }, cache),
      'resources/templates/list': async () => Object.assign({ resultType: 'complete', resourceTemplates: [] }, cache),
      'resources/read': async () => Promise.reject(invalidParams('Resource not found')),
      'prompts/get': async () => Promise.reject(invalidParams('Prompt not found')),
      'tools/call': (call) => callTool(runtime, call),
      'tasks/get': async (call) => encodeTask(await getTask(runtime, new ReadOfCaller(authKeyOf(call.principal), taskIdOf(call, 'tasks/get'), true, call))),
      'tasks/update': async (call) => {
        if (!declaresTasks(call.capabilities)) throw missingTasksExtension('tasks/update');
        const parsed = UpdateTaskParams.safeParse(call.params);
        if (!parsed.success) throw invalidParams(`Invalid params for tasks/update: ${describeIssue(parsed.error)}`);
        const { taskId, inputResponses } = parsed.data;
        return encodeUpdate(await answerTask(runtime, { auth: authKeyOf(call.principal), taskId, responses: inputResponses, via: 'tasks/update' }));
      },
      'tasks/cancel': async (call) => encodeCancel(await cancelTask(runtime, { auth: authKeyOf(call.principal), taskId: taskIdOf(call, 'tasks/cancel') })),
      'subscriptions/listen': (call) => listen(runtime, options.subscriptions, call),
    } satisfies Record<string, Handler>),
  );
}

/**
 * `subscriptions/listen`: a slot is taken before anything is read, the named ids are read once
 * (the request layer's `acceptWatch`: a store that stays away is a 503 to retry, not an empty
 * ack), and the stream is opened by the HTTP layer.
 */
async function listen(runtime: TaskRuntime, subscriptions: SubscriptionSlots, call: Call): Promise<StreamReply> {
  const parsed = ListenParams.safeParse(call.params);
  if (!parsed.success) throw invalidParams(`Invalid params for subscriptions/listen: ${describeIssue(parsed.error)}`);
  const taskIds = parsed.data.notifications.taskIds ?? [];
  if (taskIds.length > 0 && !declaresTasks(call.capabilities)) throw missingTasksExtension('Task subscriptions');
  const most = runtime.limits.maxListenTaskIds;
  if (taskIds.length > most) throw invalidParams(`Invalid params for subscriptions/listen: ${taskIds.length} task ids; at most ${most} per listen`);
  const auth = authKeyOf(call.principal);
  const release = subscriptions.take(auth);
  const { accepted } = await acceptWatch(runtime, { auth, taskIds, via: 'subscriptions/listen', signal: call.signal }).catch((error: unknown) => {
    release();
    throw error;
  });
  const open = async (sink: EventSink, closed: AbortSignal) => {
    try {
      await openTaskSubscription({ host: runtime, auth, accepted, subscriptionId: call.id, sink, closed });
    } finally {
      release();
    }
  };
  return new StreamReply(open, release);
}

/** The task id of a get or cancel, after the extension check: a non-declaring request learns nothing. */
function taskIdOf(call: Call, method: string): string {
  if (!declaresTasks(call.capabilities)) throw missingTasksExtension(method);
  const taskId = plainTaskId(call.params) ?? TaskIdParams.safeParse(call.params);
  if (typeof taskId !== 'string' && !taskId.success) throw invalidParams(`Invalid params for ${method}: ${describeIssue(taskId.error)}`);
  return typeof taskId === 'string' ? taskId : taskId.data.taskId;
}
