import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { awaitResult } from '../runtime/requests/await-result.js';
import { cancelTask } from '../runtime/requests/cancel-task.js';
import { getTask, ReadOfCaller } from '../runtime/requests/get-task.js';
import { listTasks } from '../runtime/requests/list-tasks.js';
import { listTools } from '../runtime/requests/list-tools.js';
import { authKeyOf } from '../tools/principal.js';
import { askOnStream } from './client-requests.js';
import { encodeCancel, encodePage, encodeResult, encodeTask } from './encode.js';
import type { Extra, Register, SessionContext } from './session.js';
import { callTool } from './tool-call.js';

export type { Register, SessionContext, SessionHost } from './session.js';

/** What a read of a session is asked with besides its params: the request's auth info and abort signal. */
export interface ReadCall {
  authInfo?: Extra['authInfo'];
  signal: AbortSignal;
}

/**
 * The reads of a session (`tasks/get`, `tasks/list`, `tasks/cancel`): params, already checked
 * against the SDK's schema, to the JSON-RPC result. The SDK `Server` of a session runs them as
 * its handlers, and `session-reads.ts` runs the same functions for a plain read of an
 * established session, off the SDK transport: both answer alike because both run these.
 */
export const SESSION_READS = {
  'tasks/get': async (session: SessionContext, params: { taskId: string }, call: ReadCall) =>
    encodeTask(await getTask(session.server.runtime, new ReadOfCaller(await authOf(session, call), params.taskId, false, call))),
  'tasks/cancel': async (session: SessionContext, params: { taskId: string }, call: ReadCall) =>
    encodeCancel(await cancelTask(session.server.runtime, { auth: await authOf(session, call), taskId: params.taskId })),
  'tasks/list': async (session: SessionContext, params: { cursor?: string } | undefined, call: ReadCall) =>
    encodePage(await listTasks(session.server.runtime, { auth: await authOf(session, call), cursor: params?.cursor })),
} as const;

export type SessionReadMethod = keyof typeof SESSION_READS;

async function authOf(session: SessionContext, call: ReadCall): Promise<string> {
  return authKeyOf(await session.server.principalFor(session, call.authInfo));
}

/**
 * The 2025-11-25 methods of one session: each decodes its params (already checked against the
 * SDK's schema), asks the request layer (`src/runtime/requests/`, with the runtime as host) and
 * encodes the outcome (`encode.ts`). `tasks/cancel` and `tasks/list` are installed only where the
 * runtime declares them: an undeclared one is method not found, as the spec says.
 */
export function registerTaskHandlers(session: SessionContext, register: Register): void {
  const { server } = session;
  const { runtime } = server;
  const { capabilities } = runtime;
  const auth = async (extra: Extra) => authKeyOf(await server.principalFor(session, extra.authInfo));
  const clientTakesTasks = () => (session.sdk.getClientCapabilities() as Record<string, unknown> | undefined)?.tasks !== undefined;

  register(ListToolsRequestSchema, async () => ({ tools: listTools(runtime, { clientTakesTasks: clientTakesTasks() }).tools }));

  register(CallToolRequestSchema, (request: { params: Record<string, unknown> & { name: string } }, extra) => callTool(session, request.params, extra));

  register(GetTaskRequestSchema, (request: { params: { taskId: string } }, extra) => SESSION_READS['tasks/get'](session, request.params, extra));

  register(GetTaskPayloadRequestSchema, async (request: { params: { taskId: string } }, extra) =>
    encodeResult(await awaitResult(runtime, { auth: await auth(extra), taskId: request.params.taskId, signal: extra.signal, ask: askOnStream(extra) })),
  );

  if (capabilities.cancel !== undefined) {
    register(CancelTaskRequestSchema, (request: { params: { taskId: string } }, extra) => SESSION_READS['tasks/cancel'](session, request.params, extra));
  }

  if (capabilities.list !== undefined) {
    register(ListTasksRequestSchema, (request: { params?: { cursor?: string } }, extra) => SESSION_READS['tasks/list'](session, request.params, extra));
  }
}
